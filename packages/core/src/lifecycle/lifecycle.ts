/**
 * Folder lifecycle/: the memory lifecycle (G1–G9): generations and commits per session, drained
 * on close (C2, C5) and run outside every lock (D3). memory-types.ts is the memory provider's
 * side of it, lifecycle-input.ts the checks of its calls' arguments.
 */

import type { StorageAdapter } from '../adapter/adapter.js';
import { adapterCall } from '../adapter/adapter-call.js';
import { MemoryCommitIncompleteError, StoreClosedError } from '../errors/lifecycle-errors.js';
import { CorruptDocumentError, RevisionConflictError } from '../errors/storage-errors.js';
import type { Clock } from '../time/clock.js';
import { lifecycleStateSchema } from '../validation/schemas.js';
import {
  agentOption,
  assertMemoryAgent,
  drainOptions,
  lifecycleSessionId,
} from './lifecycle-input.js';
import type { DrainReport, MemoryAgent, MemoryLifecycle } from './memory-types.js';

interface DirtySegment {
  /** The agent that owns these turns; kept through failures (G4) and re-registration (G5). */
  owner: MemoryAgent | undefined;
  /** Highest generation in this segment; it starts after the previous segment. */
  upTo: number;
}

interface SessionLifecycle {
  generation: number;
  committedGeneration: number;
  revision: number | null;
  segments: DirtySegment[];
  inFlight: Promise<boolean> | null;
}

export interface LifecycleOptions {
  adapter: StorageAdapter;
  clock: Clock;
  drainDeadlineMs: number;
  /** Background work must not inherit a held session lock (D3). */
  detached<T>(fn: () => T): T;
  isClosing(): boolean;
  onCommitError(sessionId: string, error: unknown): void;
  onQuarantine(sessionId: string, location: string): void;
}

/**
 * G1–G9: the memory lifecycle of batch-extraction memory providers. Completed turns bump
 * a generation; one commit flushes the oldest dirty segment with the agent that owns it;
 * a commit clears only the generations it captured when it started. Generations are
 * persisted (G9) so a restart between a completed turn and its commit loses nothing.
 */
export class Lifecycle implements MemoryLifecycle {
  private readonly sessions = new Map<string, SessionLifecycle>();
  private readonly loading = new Map<string, Promise<SessionLifecycle>>();

  constructor(private readonly options: LifecycleOptions) {}

  /** The registered agent per session: the owner of future completed turns. */
  private readonly agents = new Map<string, MemoryAgent>();

  // A1, A3, G8: arguments are checked first (lifecycle-input.ts); an empty id is a no-op.
  registerAgent(sessionId: string | null | undefined, agent: MemoryAgent): void {
    assertMemoryAgent(agent, 'registerAgent()', 'agent');
    const id = lifecycleSessionId(sessionId);
    if (id !== null) this.agents.set(id, agent);
  }

  unregisterAgent(sessionId: string | null | undefined): void {
    const id = lifecycleSessionId(sessionId);
    if (id !== null) this.agents.delete(id);
  }

  async markTurnCompleted(
    sessionId: string | null | undefined,
    options?: { agent?: MemoryAgent },
  ): Promise<number> {
    const agent = agentOption(options, 'markTurnCompleted()');
    const id = lifecycleSessionId(sessionId);
    if (id === null) return 0;
    const state = await this.stateOf(id);
    state.generation++;
    const owner = agent ?? this.agents.get(id);
    const last = state.segments.at(-1);
    if (last !== undefined && last.owner === owner) last.upTo = state.generation;
    else state.segments.push({ owner, upTo: state.generation });
    await this.persist(id, state);
    return state.generation;
  }

  async hasUncommittedWork(sessionId: string | null | undefined): Promise<boolean> {
    const id = lifecycleSessionId(sessionId);
    if (id === null) return false;
    const state = await this.stateOf(id);
    return state.generation > state.committedGeneration;
  }

  async commit(
    sessionId: string | null | undefined,
    options?: { agent?: MemoryAgent },
  ): Promise<boolean> {
    const agent = agentOption(options, 'commit()');
    const id = lifecycleSessionId(sessionId);
    if (id === null) return false;
    if (this.options.isClosing()) throw new StoreClosedError('commit memory');
    return this.commitInternal(id, agent, new AbortController().signal);
  }

  async drain(options?: {
    deadlineMs?: number;
    agents?: ReadonlyMap<string, MemoryAgent>;
  }): Promise<DrainReport> {
    const { agents, ...given } = drainOptions(options);
    const report: DrainReport = { committed: [], failed: [], abandoned: [] };
    const deadlineMs = given.deadlineMs ?? this.options.drainDeadlineMs;
    const controller = new AbortController();
    const sessionIds = new Set([...this.sessions.keys(), ...agents.keys()]);
    const work = [...sessionIds].map(async (sessionId) => {
      const state = await this.stateOf(sessionId);
      const agent = agents.get(sessionId);
      // G6: wait for a commit in flight, then commit every newer generation.
      while (state.generation > state.committedGeneration && !controller.signal.aborted) {
        const before = state.committedGeneration;
        const ok = await this.commitInternal(sessionId, agent, controller.signal).catch(
          (error: unknown) => {
            report.failed.push({ sessionId, error });
            return false;
          },
        );
        if (!ok || state.committedGeneration === before) break;
      }
      if (controller.signal.aborted) return;
      if (state.generation > state.committedGeneration) {
        if (!report.failed.some((failure) => failure.sessionId === sessionId)) {
          report.failed.push({
            sessionId,
            error: new MemoryCommitIncompleteError(sessionId),
          });
        }
      } else if (state.committedGeneration > 0) report.committed.push(sessionId);
    });
    let timer: ReturnType<Clock['setTimer']> | null = null;
    const deadline = new Promise<'deadline'>((resolve) => {
      timer = this.options.detached(() =>
        this.options.clock.setTimer(() => resolve('deadline'), deadlineMs),
      );
    });
    const outcome = await Promise.race([Promise.all(work).then(() => 'done' as const), deadline]);
    if (timer !== null) this.options.clock.clearTimer(timer);
    if (outcome === 'deadline') {
      // C5: a hung provider call is abandoned (and told so through its signal).
      controller.abort();
      for (const [sessionId, state] of this.sessions) {
        if (state.generation > state.committedGeneration && !report.committed.includes(sessionId)) {
          report.abandoned.push(sessionId);
        }
      }
    }
    return report;
  }

  async evict(sessionId: string | null | undefined): Promise<boolean> {
    const id = lifecycleSessionId(sessionId);
    if (id === null) return false;
    const state = await this.stateOf(id);
    const agent = this.agents.get(id);
    while (state.generation > state.committedGeneration) {
      const before = state.committedGeneration;
      const ok = await this.commitInternal(id, undefined, new AbortController().signal);
      if (!ok || state.committedGeneration === before) break;
    }
    await state.inFlight;
    if (state.generation > state.committedGeneration) return false;
    this.agents.delete(id);
    // Registered agents were checked (a `close` is a method or absent); read it once.
    const close = agent?.close;
    if (close !== undefined) await close.call(agent);
    return true;
  }

  /** B8: forgets a deleted session's lifecycle. */
  forget(sessionId: string): void {
    this.sessions.delete(sessionId);
    this.agents.delete(sessionId);
  }

  private async commitInternal(
    sessionId: string,
    explicitAgent: MemoryAgent | undefined,
    signal: AbortSignal,
  ): Promise<boolean> {
    const state = await this.stateOf(sessionId);
    // One commit per session at a time: a second caller waits for the first, then runs.
    while (state.inFlight !== null) await state.inFlight.catch(() => false);
    const run = this.options.detached(() =>
      this.commitOldestSegment(sessionId, state, explicitAgent, signal),
    );
    state.inFlight = run;
    try {
      return await run;
    } finally {
      if (state.inFlight === run) state.inFlight = null;
    }
  }

  private async commitOldestSegment(
    sessionId: string,
    state: SessionLifecycle,
    explicitAgent: MemoryAgent | undefined,
    signal: AbortSignal,
  ): Promise<boolean> {
    const segment = state.segments[0];
    if (segment === undefined || state.generation <= state.committedGeneration) return false;
    // G5: the oldest segment is committed by its own owner, even when a new agent is passed.
    const owner = segment.owner ?? explicitAgent ?? this.agents.get(sessionId);
    if (owner === undefined) return false;
    const captured = segment.upTo;
    const fromGeneration = state.committedGeneration + 1;
    try {
      await owner.commitMemory({ sessionId, fromGeneration, toGeneration: captured, signal });
    } catch (error) {
      // G4: the work stays uncommitted and keeps the handle that owns it.
      segment.owner = owner;
      this.options.onCommitError(sessionId, error);
      return false;
    }
    if (signal.aborted) return false;
    // G3: clear only what was captured at the start; later turns stay dirty.
    state.committedGeneration = Math.max(state.committedGeneration, captured);
    state.segments = state.segments.filter((candidate) => candidate.upTo > captured);
    await this.persist(sessionId, state);
    return true;
  }

  private stateOf(sessionId: string): Promise<SessionLifecycle> {
    const known = this.sessions.get(sessionId);
    if (known !== undefined) return Promise.resolve(known);
    let loading = this.loading.get(sessionId);
    if (loading === undefined) {
      loading = this.load(sessionId).finally(() => this.loading.delete(sessionId));
      this.loading.set(sessionId, loading);
    }
    return loading;
  }

  private async load(sessionId: string): Promise<SessionLifecycle> {
    const { adapter } = this.options;
    const stored = await adapterCall(adapter.name, 'read lifecycle state', () =>
      adapter.getDocument('lifecycle', sessionId),
    );
    let generation = 0;
    let committedGeneration = 0;
    if (stored !== null) {
      const parsed = lifecycleStateSchema.safeParse(safeJson(stored.base));
      if (!parsed.success || parsed.data.sessionId !== sessionId) {
        // A2: never read unreadable state as "nothing to commit": move it aside and say so.
        const location = await adapterCall(adapter.name, 'quarantine a document', () =>
          adapter.quarantineDocument('lifecycle', sessionId, 'lifecycle state does not parse'),
        );
        this.options.onQuarantine(sessionId, location);
        throw new CorruptDocumentError(sessionId, adapter.name, location, {
          cause: parsed.success ? new Error('lifecycle state names another session') : parsed.error,
        });
      }
      ({ generation, committedGeneration } = parsed.data);
    }
    const state: SessionLifecycle = {
      generation,
      committedGeneration,
      revision: stored?.revision ?? null,
      // Work left from before a restart has no known owner; an explicit agent commits it.
      segments: generation > committedGeneration ? [{ owner: undefined, upTo: generation }] : [],
      inFlight: null,
    };
    this.sessions.set(sessionId, state);
    return state;
  }

  private async persist(sessionId: string, state: SessionLifecycle, attempt = 0): Promise<void> {
    const revision = (state.revision ?? 0) + 1;
    const text = JSON.stringify({
      sessionId,
      generation: state.generation,
      committedGeneration: state.committedGeneration,
    });
    const result = await this.options.adapter.putDocument(
      'lifecycle',
      sessionId,
      { kind: 'full', revision, text },
      { expectedRevision: state.revision, durable: true },
    );
    if (result.ok) state.revision = revision;
    else {
      // Another instance wrote it: take the higher generations and write again.
      const stored = await this.options.adapter.getDocument('lifecycle', sessionId);
      const parsed = lifecycleStateSchema.safeParse(safeJson(stored?.base ?? 'null'));
      state.revision = stored?.revision ?? null;
      if (parsed.success) {
        state.generation = Math.max(state.generation, parsed.data.generation);
        state.committedGeneration = Math.max(
          state.committedGeneration,
          parsed.data.committedGeneration,
        );
      }
      if (attempt >= 8) throw new RevisionConflictError(sessionId, state.revision, null);
      await this.persist(sessionId, state, attempt + 1);
    }
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}
