/**
 * Folder runs/: runs and the pending turn they own (E1, E4–E8, D4). This file is the run half
 * of the store API (E1, E6, E7, E8); run.ts is a live run (D4 fencing), end-pending-turn.ts
 * writes its ending into the transcript (E5, E6), checkpoint.ts is its periodic checkpoint (E4),
 * run-locations.ts finds a run by id (E8). follow/ follows a run to its ending (E9). The journal
 * a run writes is journal/'s, the repair of a run that died is recovery/'s.
 */

import { adapterCall } from '../adapter/adapter-call.js';
import { InvalidInputError } from '../errors/input-errors.js';
import { StoreClosedError } from '../errors/lifecycle-errors.js';
import { RunNotActiveError, SessionBusyError } from '../errors/run-errors.js';
import { NotFoundError, RevisionConflictError } from '../errors/storage-errors.js';
import { readJournal, readWholeJournal } from '../journal/journal-read.js';
import { terminalStateOf } from '../journal/terminal-state.js';
import type { Lifecycle } from '../lifecycle/lifecycle.js';
import type { LockRegistry } from '../locks/lock-registry.js';
import type { ResolvedOptions } from '../options/options.js';
import { closeAnsweredRun } from '../recovery/answered-run.js';
import { type RecoveryContext, repairPendingTurn } from '../recovery/recovery.js';
import { isSuperseded } from '../recovery/turn-markers.js';
import type { LiveSessions } from '../sessions/live-sessions.js';
import type { CacheEntry, SessionCache } from '../sessions/session-cache.js';
import type { SessionPersistence } from '../sessions/session-persistence.js';
import type { SaveOptions } from '../sessions/session-types.js';
import type { StoreEvent } from '../store-types.js';
import { assertValidId, randomId } from '../validation/ids.js';
import type { JournalRecord, Session } from '../validation/schemas.js';
import { normalizeMessage } from '../validation/session-validation.js';
import {
  endRepairedTurn,
  interruptPendingTurn,
  MAX_CONFLICT_ATTEMPTS,
} from './end-pending-turn.js';
import { RunFollowers } from './follow/run-followers.js';
import { Run } from './run.js';
import { createJournalWriter, type RefreshOutcome, type RunHost } from './run-host.js';
import { readRunLocation, removeRunLocations, writeRunLocation } from './run-locations.js';
import type {
  BeginRunInput,
  CancelOutcome,
  JournalReadOptions,
  JournalReadResult,
  RunHandle,
  RunSummary,
  RunTerminalState,
} from './run-types.js';

/** What the run half of the store needs from the rest of it. */
export interface StoreRunsHost {
  readonly options: ResolvedOptions;
  readonly locks: LockRegistry;
  readonly lifecycle: Lifecycle;
  readonly cache: SessionCache;
  readonly persistence: SessionPersistence;
  readonly liveSessions: LiveSessions;
  readonly closed: boolean;
  ready(operation: string): Promise<void>;
  /** The store's load, which repairs a dead pending turn (F1). */
  load(id: string): Promise<Session>;
  emit(event: StoreEvent): void;
}

/**
 * The run half of the store: starting runs (E1), cancelling turns (E6) and reading their
 * journals, and the RunHost its live runs call back into. At most one live run per session
 * in this store; the session's pending turn says which run owns it across instances (D4).
 */
export class StoreRuns implements RunHost {
  readonly options: ResolvedOptions;
  readonly locks: LockRegistry;
  private readonly runs = new Map<string, Run>();
  /** H4: the followers of runs, woken by this store's appends and run endings. */
  readonly followers = new RunFollowers();

  constructor(private readonly store: StoreRunsHost) {
    this.options = store.options;
    this.locks = store.locks;
  }

  // ── Live runs ────────────────────────────────────────────────────────────────────

  get size(): number {
    return this.runs.size;
  }

  get(sessionId: string): Run | undefined {
    return this.runs.get(sessionId);
  }

  has(sessionId: string): boolean {
    return this.runs.has(sessionId);
  }

  /**
   * Whether this store streams the run (H4: its records and endings wake its followers). A
   * stalled run (its ending failed, `Run.stalled`) is not: its followers and loads treat it
   * as any silent run, and end it once the grace has passed (F1).
   */
  isLiveHere(runId: string): boolean {
    for (const run of this.runs.values()) if (run.runId === runId && !run.stalled) return true;
    return false;
  }

  /** The ids of the runs this store streams (not stalled ones): their turns are not repaired. */
  liveRunIds(): Set<string> {
    const ids = new Set<string>();
    for (const run of this.runs.values()) if (!run.stalled) ids.add(run.runId);
    return ids;
  }

  all(): Run[] {
    return [...this.runs.values()];
  }

  /**
   * D2: the live run of a rotated session moves to the new id, its journal with it.
   * The caller holds the session lock.
   */
  async followRotation(oldId: string, newId: string): Promise<void> {
    const live = this.runs.get(oldId);
    if (live !== undefined) {
      await live.moveTo(newId);
      this.runs.delete(oldId);
      this.runs.set(newId, live);
      // E8: a lookup by the run's id now finds it under the new session id.
      await writeRunLocation(this.options.adapter, {
        sessionId: newId,
        runId: live.runId,
        startedAt: live.startedAt,
      }).catch((error: unknown) =>
        this.emit({
          type: 'warning',
          sessionId: newId,
          field: 'runs',
          message: `could not record where run "${live.runId}" lives after the rename: ${error instanceof Error ? error.message : String(error)}`,
        }),
      );
    }
  }

  // ── Runs API ─────────────────────────────────────────────────────────────────────

  async beginRun(sessionId: string, input: BeginRunInput): Promise<RunHandle> {
    if (this.store.closed) throw new StoreClosedError('start a run');
    assertValidId(sessionId);
    if (typeof input !== 'object' || input === null) {
      throw new InvalidInputError('beginRun() needs { userMessage }');
    }
    const runId = input.runId === undefined ? randomId() : assertValidId(input.runId, 'run');
    const replaceFrom =
      input.replaceFrom === undefined ? undefined : assertValidId(input.replaceFrom, 'message');
    const now = this.options.clock.now();
    const userMessage = normalizeMessage(input.userMessage, now, 'beginRun() userMessage');
    if (input.attachments !== undefined && !Array.isArray(input.attachments)) {
      throw new InvalidInputError('beginRun(): `attachments` must be an array');
    }
    await this.store.ready('start a run');
    // E7: a run of this store still owns the session (maybe held up by a cancel waiting
    // for its appends): busy at once, not after waiting for the lock.
    const running = this.runs.get(sessionId);
    // A stalled run (its ending failed) may be over by now: the load below tells.
    if (running !== undefined && !running.stalled) {
      throw new SessionBusyError(sessionId, running.runId);
    }
    // Recovery of a dead pending turn runs here, before the lock is taken.
    await this.store.load(sessionId);
    return this.locks.withLock(sessionId, async () => {
      if (this.store.closed) throw new StoreClosedError('start a run');
      const live = this.runs.get(sessionId);
      if (live !== undefined) throw new SessionBusyError(sessionId, live.runId);
      const entry = await this.entryFor(sessionId);
      const session = entry.session;
      // Another instance may have finished or cancelled that turn since we cached it.
      if (session.pending !== null && (await this.refreshIfClean(entry)) === 'deleted') {
        this.store.cache.delete(sessionId);
        throw new NotFoundError(sessionId);
      }
      if (session.pending !== null) {
        const outcome = await repairPendingTurn(session, this.recoveryContext());
        if (outcome === 'alive') throw new SessionBusyError(sessionId, session.pending.streamId);
      }
      // B5: a regenerate drops the old question and what followed it in this same write.
      const kept = keptBefore(session, sessionId, replaceFrom);
      // E1: the question is added at the end of the turn only if its id is new, so an id
      // already in the transcript would silently drop it then; refuse it now instead.
      if (kept.some((message) => message.id === userMessage.id)) {
        throw new InvalidInputError(
          `beginRun(): userMessage.id "${userMessage.id}" is already the id of a message in session "${sessionId}"; omit it to get a fresh one`,
        );
      }
      const previousPending = session.pending;
      const previousMessages = session.messages;
      session.messages = kept;
      session.pending = {
        streamId: runId,
        userMessage,
        attachments: input.attachments ?? [],
        startedAt: now,
        heartbeatAt: now,
        // F1: who to ask whether the run's process is alive (AdapterLiveness).
        ...(this.options.adapter.liveness === undefined
          ? {}
          : { ownerId: this.options.adapter.liveness.ownerId }),
      };
      // E8: where the run lives is recorded beside the turn's save, not after it (no extra
      // round trip). A failed record only costs lookups by run id: a warning, not a failure.
      const locating = writeRunLocation(this.options.adapter, {
        sessionId,
        runId,
        startedAt: now,
      }).then(
        () => true,
        (error: unknown) => {
          this.emit({
            type: 'warning',
            sessionId,
            field: 'runs',
            message: `could not record where run "${runId}" lives (findRun will not find it): ${error instanceof Error ? error.message : String(error)}`,
          });
          return false;
        },
      );
      try {
        // E1: the user's turn is durable before the agent starts.
        await this.store.persistence.write(entry, {
          fsync: true,
          allowShrink: kept !== previousMessages,
        });
      } catch (error) {
        session.pending = previousPending;
        session.messages = previousMessages;
        // No run began: its location must not send a lookup to this session.
        if (await locating) {
          await removeRunLocations(this.options.adapter, sessionId, [runId]).catch(() => undefined);
        }
        throw error;
      }
      await locating;
      const run = new Run(this, sessionId, runId, now);
      this.runs.set(sessionId, run);
      run.start();
      this.emit({ type: 'run', sessionId, runId, state: 'started' });
      return run;
    });
  }

  activeRun(sessionId: string): RunHandle | null {
    return this.runs.get(sessionId) ?? null;
  }

  async cancelRun(sessionId: string, runId?: string): Promise<CancelOutcome> {
    assertValidId(sessionId);
    if (runId !== undefined) assertValidId(runId, 'run');
    await this.store.ready('cancel a run');
    const local = this.runs.get(sessionId);
    if (local !== undefined && (runId === undefined || local.runId === runId))
      return local.cancel();
    // E6: when the cancel was asked for; a crash repair that ended the turn after this
    // (while the cancel waited for the lock) does not drop it.
    const askedAt = this.options.clock.now();
    return this.locks.withLock(sessionId, async () => {
      const entry = await this.entryFor(sessionId);
      if ((await this.refreshIfClean(entry)) === 'deleted') {
        this.forgetDeleted(sessionId);
        return { cancelled: false, reason: 'no-pending-turn' };
      }
      const pending = entry.session.pending;
      if (pending === null) {
        const repaired = repairedSince(entry.session, askedAt, runId);
        if (repaired === null) return { cancelled: false, reason: 'no-pending-turn' };
        const writer = createJournalWriter(this, sessionId, repaired);
        const taken = await endRepairedTurn(this, entry, writer, repaired, 'cancel');
        return taken ?? { cancelled: false, reason: 'already-finished' };
      }
      if (runId !== undefined && pending.streamId !== runId)
        return { cancelled: false, reason: 'not-active' };
      const writer = createJournalWriter(this, sessionId, pending.streamId);
      for (let attempt = 1; ; attempt++) {
        try {
          return await interruptPendingTurn(this, entry, writer, 'cancel');
        } catch (error) {
          // B8: deleted by another instance after the refresh above (the cancel was its first record).
          if (writer.isDeleted) {
            this.forgetDeleted(sessionId);
            // A journal that could not be removed is reported, not swallowed.
            if (!RunNotActiveError.isInstance(error)) throw error;
            return { cancelled: false, reason: 'no-pending-turn' };
          }
          if (!RevisionConflictError.isInstance(error) || attempt >= MAX_CONFLICT_ATTEMPTS) {
            throw error;
          }
          // The run's own instance (or a third) wrote the session meanwhile: learn what it
          // wrote; its pending turn may be ended already, or owned by another run now.
          if ((await this.refreshIfClean(entry)) === 'deleted') {
            return { cancelled: false, reason: 'no-pending-turn' };
          }
          if (entry.session.pending?.streamId !== pending.streamId) {
            // A crash repair of another instance ended the turn after our record landed.
            const taken = await endRepairedTurn(
              this,
              entry,
              writer,
              pending.streamId,
              'cancel',
              undefined,
              true,
            );
            return taken ?? { cancelled: false, reason: 'already-finished' };
          }
        }
      }
    });
  }

  async readJournal(
    sessionId: string,
    runId: string,
    options: JournalReadOptions = {},
  ): Promise<JournalReadResult> {
    assertValidId(sessionId);
    assertValidId(runId, 'run');
    for (const name of ['afterSequence', 'upToSequence', 'limit'] as const) {
      const value = options[name];
      if (value !== undefined && (!Number.isInteger(value) || value < 0)) {
        throw new InvalidInputError(`readJournal(): \`${name}\` must be a non-negative integer`);
      }
    }
    await this.store.ready('read a journal');
    return readJournal(this.options.adapter, sessionId, runId, options);
  }

  async runSummary(sessionId: string, runId: string): Promise<RunSummary> {
    assertValidId(sessionId);
    assertValidId(runId, 'run');
    await this.store.ready('read a journal');
    const journal = await readWholeJournal(this.options.adapter, sessionId, runId);
    const last = journal.records.at(-1);
    return {
      sessionId,
      runId,
      exists: journal.exists,
      lastSequence: journal.lastSequence,
      terminalState: terminalStateOf(journal.records),
      lastEventType: last?.type ?? null,
      lastEventId: last?.eventId ?? null,
    };
  }

  /** E5, F1: seals the journal of a run whose answered turn is stored (see answered-run.ts). */
  async closeAnsweredRun(sessionId: string, runId: string): Promise<RunTerminalState | null> {
    assertValidId(sessionId);
    assertValidId(runId, 'run');
    await this.store.ready('close an answered run');
    const summary = await this.runSummary(sessionId, runId);
    if (summary.terminalState !== null) return summary.terminalState;
    const liveHere = this.runs.get(sessionId)?.runId === runId;
    return closeAnsweredRun(this, sessionId, runId, liveHere);
  }

  /**
   * E8: the run with this id, wherever it lives, or null when no stored session has it (a
   * run begun before run locations existed, or whose session was deleted).
   */
  async findRun(runId: string): Promise<RunSummary | null> {
    assertValidId(runId, 'run');
    await this.store.ready('find a run');
    const adapter = this.options.adapter;
    const read = await readRunLocation(adapter, runId);
    if (read.status === 'quarantined') {
      // Which session the run belongs to is exactly what is unknown here.
      this.emit({
        type: 'warning',
        sessionId: '',
        field: 'runs',
        message: `the location of run "${runId}" did not parse; it was moved to ${read.quarantinedAt}`,
      });
      return null;
    }
    if (read.status === 'missing') return null;
    const { sessionId } = read.location;
    const exists = await adapterCall(adapter.name, 'check a session', () =>
      adapter.hasDocument('sessions', sessionId),
    );
    return exists ? this.runSummary(sessionId, runId) : null;
  }

  async listRuns(sessionId: string): Promise<string[]> {
    assertValidId(sessionId);
    await this.store.ready('list runs');
    const adapter = this.options.adapter;
    return adapterCall(adapter.name, 'list journals', () => adapter.listLogs(sessionId));
  }

  // ── RunHost ──────────────────────────────────────────────────────────────────────

  entryFor(sessionId: string): Promise<CacheEntry> {
    return this.store.liveSessions.entryFor(sessionId);
  }

  refreshIfClean(entry: CacheEntry): Promise<RefreshOutcome> {
    return this.store.liveSessions.refreshIfClean(entry);
  }

  forgetDeleted(sessionId: string): void {
    this.store.cache.delete(sessionId);
  }

  write(entry: CacheEntry, options: SaveOptions): Promise<Session> {
    return this.store.liveSessions.write(entry, options);
  }

  runEnded(run: RunHandle): void {
    if (this.runs.get(run.sessionId) === run) this.runs.delete(run.sessionId);
  }

  async markTurnCompleted(sessionId: string): Promise<void> {
    await this.store.lifecycle.markTurnCompleted(sessionId).catch((error: unknown) =>
      this.emit({
        type: 'warning',
        sessionId,
        field: 'lifecycle',
        message: `could not record the completed turn: ${error instanceof Error ? error.message : String(error)}`,
      }),
    );
  }

  emit(event: StoreEvent): void {
    this.store.emit(event);
  }

  appended(record: JournalRecord, durationMs: number, durable: boolean): void {
    const { sessionId, runId, sequence } = record;
    this.emit({ type: 'append', sessionId, runId, sequence, durationMs, durable });
    this.followers.appended(record);
  }

  recoveryContext(): RecoveryContext {
    return {
      adapter: this.options.adapter,
      now: this.options.clock.now(),
      graceMs: this.options.graceMs,
      maxAttempts: this.options.maxAttempts,
      giveUpMs: this.options.giveUpMs,
      warn: (sessionId, message) =>
        this.emit({ type: 'warning', sessionId, field: 'journal', message }),
      // F3: unflushed, from the tail the repair read (why: RecoveryContext.appendCrashRecord).
      appendCrashRecord: async (sessionId, runId, tail) => {
        const writer = createJournalWriter(this, sessionId, runId, {
          knownTail: tail,
          durability: 'none',
        });
        const record = await writer.append({
          type: 'interrupted',
          data: { reason: 'crash' },
        });
        return record.sequence;
      },
    };
  }
}

/**
 * E6: the run whose turn another instance's crash repair ended at or after `askedAt` (its
 * interrupted marker is that recent, and no later turn was answered): a cancel asked for
 * before that repair still decides how the turn ends. Null when there is none.
 */
function repairedSince(session: Session, askedAt: number, runId?: string): string | null {
  const index = session.messages.findLastIndex(
    (message) =>
      message.marker?.type === 'interrupted' &&
      (runId === undefined || message.marker.runId === runId),
  );
  const message = session.messages[index];
  if (message?.marker === undefined || message.createdAt < askedAt) return null;
  if (isSuperseded(session, index)) return null;
  return message.marker.runId;
}

/** The transcript a run begins on: whole, or up to the message it answers again (B5). */
function keptBefore(session: Session, sessionId: string, replaceFrom?: string) {
  if (replaceFrom === undefined) return session.messages;
  const index = session.messages.findIndex((message) => message.id === replaceFrom);
  if (index < 0) {
    throw new InvalidInputError(
      `beginRun(): replaceFrom "${replaceFrom}" is not the id of a message in session "${sessionId}"`,
    );
  }
  return session.messages.slice(0, index);
}
