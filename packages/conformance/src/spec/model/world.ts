import { isDeepStrictEqual } from 'node:util';
import {
  BackendError,
  KeepsakeError,
  type Session,
  type SessionStore,
  type StorageAdapter,
} from '@keepsake/core';
import type fc from 'fast-check';
import { expect } from 'vitest';
import type { OpenedStore, StoreOverrides, TestEnvironment } from '../../harness/environment.js';
import { type PersistedSession, readPersistedSession } from '../../harness/persisted-document.js';
import type { AdapterMethod } from '../../harness/recording-fault-injecting-adapter.js';
import { compareTranscript, type ExpectedMessage } from './expected-messages.js';
import type { ExpectedToolCall } from './expected-turns.js';
import { History } from './history.js';
import type { FaultPoint, WorldConfig } from './program.js';
import { SessionModel } from './session-model.js';

type ErrorClass = { isInstance(error: unknown): boolean; name: string };

/** Names a slot's session has in turn (its first id, then what renames move it to). */
const NAMES_PER_SLOT = 3;

/** F1: past the default `recovery.graceMs` (30 s): a run silent this long looks dead. */
export const PAST_GRACE_MS = 30_001;

/**
 * E4: checkpoints that never fire (about 24 days of the manual clock): a run of this world
 * looks dead to another instance once the grace period passes, as a hung worker does.
 */
const NO_CHECKPOINTS = { intervalMs: 2_000_000_000, idleRefreshMs: 2_000_000_000 } as const;

/** A warning event a store of the run emitted (E2, F1: damaged or foreign journal records). */
export interface WarningSeen {
  readonly instance: string;
  readonly sessionId: string;
  readonly field: string;
  readonly message: string;
}

/**
 * The real side of one run: the store under test (reopened by restarts), fast-check's
 * scheduler deciding every interleaving, the faults, a raw adapter for reading what is
 * stored, the history, and the reference model of every slot.
 */
export class ModelWorld {
  readonly history = new History();
  readonly slots: SessionModel[];
  private current: OpenedStore | null = null;
  /** Another server instance on the same namespace (opened on first use, D4, E6, F3). */
  private second: OpenedStore | null = null;
  private raw: StorageAdapter | null = null;
  private scheduling = true;
  private clockQueue: Promise<void> = Promise.resolve();
  readonly warnings: WarningSeen[] = [];

  constructor(
    readonly env: TestEnvironment,
    readonly config: WorldConfig,
    private readonly scheduler: fc.Scheduler,
  ) {
    // One slot more than the tasks use: the spare, written only between rounds.
    this.slots = Array.from(
      { length: config.sessions + 1 },
      (_, slot) =>
        new SessionModel(
          slot,
          Array.from({ length: NAMES_PER_SLOT }, () => env.id(`m${slot}`)),
        ),
    );
  }

  get opened(): OpenedStore {
    if (this.current === null) throw new Error('no store is open');
    return this.current;
  }

  get store() {
    return this.opened.store;
  }

  /** The slot no task uses: interludes write it while the backend fails inside. */
  get spare(): SessionModel {
    return this.slots.at(-1)!;
  }

  /** The options of every store of the run (the primary, the other instance, workers). */
  private storeOptions(): StoreOverrides {
    return {
      cache: { maxSessions: this.config.cacheSize },
      journal: { durability: this.config.durability },
      ...(this.config.heartbeats ? {} : { checkpoint: NO_CHECKPOINTS }),
    };
  }

  /**
   * A store on the run's namespace with the run's options (and, if the run says so, every
   * adapter call a scheduling point), its warning events recorded.
   */
  private async openInstance(instance: string): Promise<OpenedStore> {
    const opened = await this.env.openStore(this.storeOptions());
    if (this.config.interleaveAdapterCalls) {
      opened.adapter.interleave = (method, args) =>
        this.gate(`${instance} ${labelOf(method, args)}`);
    }
    opened.store.on((event) => {
      if (event.type !== 'warning') return;
      const { sessionId, field, message } = event;
      this.warnings.push({ instance, sessionId, field, message });
    });
    return opened;
  }

  /** Opens the primary store (the one the steps use unless they say otherwise). */
  async open(): Promise<void> {
    this.current = await this.openInstance('primary');
  }

  /** The other server instance on the same namespace, opened on first use. */
  async other(): Promise<SessionStore> {
    this.second ??= await this.openInstance('other');
    return this.second.store;
  }

  /**
   * Closes the other instance, if open, with every session flushed (it restarts with the
   * primary; nothing it holds is unsaved, so its close reports no failure, C1, C2).
   */
  async closeOther(): Promise<void> {
    const opened = this.second;
    if (opened === null) return;
    this.second = null;
    const report = await opened.store.close();
    expect(report.flush.failed, 'C1, C2: the other instance closes with nothing unflushed').toEqual(
      [],
    );
    await this.env.closeStore(opened);
  }

  /**
   * A worker process for one run that is going to die: its own store on the namespace,
   * without checkpoints, its adapter calls left to run freely.
   */
  async openWorker(): Promise<OpenedStore> {
    return this.env.openStore({
      journal: { durability: this.config.durability },
      checkpoint: NO_CHECKPOINTS,
    });
  }

  /**
   * The worker process dies: its adapter is severed; what it already wrote stays (its
   * adapter lets go of what it holds, as the OS does for a dead process).
   */
  async killWorker(worker: OpenedStore): Promise<void> {
    this.env.killProcess(worker);
    await worker.adapter.inner.close().catch(() => undefined);
  }

  /** Warnings about `sessionId`'s journals seen so far (E2, F1). */
  journalWarnings(sessionId: string): number {
    return this.warnings.filter(
      (warning) => warning.sessionId === sessionId && warning.field === 'journal',
    ).length;
  }

  /**
   * Moves the manual clock, one advance at a time: tasks ask for time at once (ticks, grace
   * periods), and `ManualClock.advance` calls that overlap can leave the clock behind where
   * one of them began when a timer fires inside one (time would run backwards). Queued, the
   * clock only ever moves forward, by every amount asked for.
   */
  advanceClock(ms: number): Promise<void> {
    const advanced = this.clockQueue.then(() => this.env.clock.advance(ms));
    this.clockQueue = advanced.catch(() => undefined);
    return advanced;
  }

  /** A point where fast-check's scheduler decides which waiting task goes on. */
  gate(label: string): Promise<void> {
    if (!this.scheduling) return Promise.resolve();
    return this.scheduler.schedule(Promise.resolve(), label);
  }

  /** From now on nothing waits for the scheduler (cleanup after the run). */
  stopScheduling(): void {
    this.scheduling = false;
  }

  /**
   * Injects one transient fault (EIO, as a conforming adapter reports it: a retryable
   * BackendError) on the next call of `point` for `sessionId`. Returns the function that
   * removes it if no call met it.
   */
  arm(point: FaultPoint, sessionId: string): () => void {
    const method: AdapterMethod = point;
    const remove = this.opened.adapter.inject({
      method,
      times: 1,
      match: (args) =>
        point === 'appendLog' || point === 'readLog'
          ? args[0] === sessionId
          : args[0] === 'sessions' && args[1] === sessionId,
      error: () =>
        new BackendError(this.opened.adapter.name, `${point} (injected transient EIO)`, {
          cause: Object.assign(new Error('EIO: i/o error (injected)'), { code: 'EIO' }),
          isRetryable: true,
        }),
    });
    this.history.note(`fault armed: EIO on the next ${point} of ${sessionId}`);
    let removed = false;
    return () => {
      if (removed) return;
      removed = true;
      remove();
    };
  }

  /** An adapter no store uses, for reading back and planting what is stored. */
  async rawAdapter(): Promise<StorageAdapter> {
    this.raw ??= await this.env.rawAdapter();
    return this.raw;
  }

  /** What storage holds for `id`, read by a raw adapter and decoded with core's codec. */
  async stored(id: string): Promise<PersistedSession | null> {
    return readPersistedSession(await this.rawAdapter(), id);
  }

  // ── Checks ───────────────────────────────────────────────────────────────────────

  expectTranscript(
    session: Pick<Session, 'messages'>,
    expected: readonly ExpectedMessage[],
    what: string,
  ): void {
    const compared = compareTranscript(session, expected);
    this.expectEqual(compared.actual, compared.expected, what);
  }

  /**
   * F4, F1: the session's tool calls are the model's, each once, scoped by its run, and each
   * owned by an assistant message of its run (not a marker).
   */
  expectToolCalls(
    session: Pick<Session, 'messages' | 'toolCalls'>,
    model: { toolCalls: readonly ExpectedToolCall[] },
    what: string,
  ): void {
    const key = (call: { runId?: string | null | undefined; id: string }) =>
      `${call.runId ?? '?'}/${call.id}`;
    const actual = session.toolCalls
      .map((call) => ({ runId: call.runId ?? null, id: call.id, name: call.name, done: call.done }))
      .sort((a, b) => key(a).localeCompare(key(b)));
    const expected = model.toolCalls
      .map((call) => ({ runId: call.runId, id: call.id, name: call.name, done: call.done }))
      .sort((a, b) => key(a).localeCompare(key(b)));
    this.expectEqual(actual, expected, `${what} (F4: once each, scoped by run)`);
    for (const call of model.toolCalls) {
      if (call.hosted === false) continue;
      const stored = session.toolCalls.find(
        (candidate) => candidate.id === call.id && candidate.runId === call.runId,
      );
      const host = session.messages.find((message) => message.id === stored?.messageId);
      if (
        host === undefined ||
        host.role !== 'assistant' ||
        host.runId !== call.runId ||
        host.marker !== undefined
      ) {
        this.fail(
          `${what}: F1: tool call ${call.id} of run ${call.runId} belongs to no assistant message of its run (messageId ${JSON.stringify(stored?.messageId)})`,
        );
      }
    }
  }

  /** Deep equality with both sides printed in full (vitest shortens nested objects). */
  expectEqual(actual: unknown, expected: unknown, what: string): void {
    if (isDeepStrictEqual(actual, expected)) return;
    this.fail(
      `${what}:\n  expected ${JSON.stringify(expected)}\n  actual   ${JSON.stringify(actual)}`,
    );
  }

  /** The rejection is a typed Keepsake error (never a TypeError) and, when given, one of `classes`. */
  expectTypedRejection(error: unknown, what: string, classes: readonly ErrorClass[] = []): void {
    const described =
      error instanceof Error ? `${error.name}: ${error.message}` : `non-error ${String(error)}`;
    expect(
      KeepsakeError.isInstance(error),
      `${what} rejected with a typed KeepsakeError, got ${described}`,
    ).toBe(true);
    if (classes.length === 0) return;
    expect(
      classes.some((errorClass) => errorClass.isInstance(error)),
      `${what} rejected with ${classes.map((errorClass) => errorClass.name).join(' or ')}, got ${described}`,
    ).toBe(true);
  }

  /** Fails with a message saying what was expected (the history is added by the runner). */
  fail(message: string): never {
    return expect.fail(message);
  }
}

function labelOf(method: AdapterMethod, args: readonly unknown[]): string {
  const names = args.slice(0, 2).filter((arg): arg is string => typeof arg === 'string');
  return `${method}(${names.join(', ')})`;
}
