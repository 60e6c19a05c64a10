import { InvalidIdError, InvalidInputError, LimitExceededError } from '../errors/input-errors.js';
import { JournalSealedError, RunNotActiveError, RunTakenOverError } from '../errors/run-errors.js';
import { RevisionConflictError } from '../errors/storage-errors.js';
import type { JournalWriter } from '../journal/journal-writer.js';
import { isFinalState } from '../journal/terminal-state.js';
import type { CacheEntry } from '../sessions/session-cache.js';
import type { JournalRecord, Session } from '../validation/schemas.js';
import { PeriodicCheckpoint } from './checkpoint.js';
import {
  appendsSettleInTime,
  endRepairedTurn,
  interruptPendingTurn,
  MAX_CONFLICT_ATTEMPTS,
  writeCompletedTurn,
} from './end-pending-turn.js';
import { createJournalWriter, type RunHost } from './run-host.js';
import {
  assertCompleteInput,
  assertJournalEventShape,
  failureOf,
  RunEventIds,
} from './run-input-validation.js';
import type { CancelOutcome, CompleteRunInput, JournalEventInput, RunHandle } from './run-types.js';

/** A live run: owns its session's pending turn through its stream id (D4). */
export class Run implements RunHandle {
  readonly streamId: string;
  private state: 'active' | 'finished' | 'fenced' = 'active';
  private readonly journal: JournalWriter;
  private readonly checkpoint: PeriodicCheckpoint;
  private readonly eventIds = new RunEventIds();
  private currentSessionId: string;
  /**
   * E6, F1: complete(), cancel() or fail() threw (the backend refused the session write or
   * the journal record) after stopping the checkpoints, and the run is still active. See
   * `stalled`.
   */
  private endingFailed = false;

  constructor(
    private readonly host: RunHost,
    sessionId: string,
    readonly runId: string,
    /** When the run began (the store clock), as its location records it (E8). */
    readonly startedAt: number,
  ) {
    this.currentSessionId = sessionId;
    this.streamId = runId;
    this.journal = createJournalWriter(host, sessionId, runId, { fencedByTakeover: true });
    this.checkpoint = new PeriodicCheckpoint({
      clock: host.options.clock,
      intervalMs: host.options.checkpointIntervalMs,
      idleRefreshMs: host.options.idleRefreshMs,
      save: () => this.checkpointSave(),
      detached: (fn) => host.locks.detached(fn),
      onError: (error) =>
        host.emit({
          type: 'warning',
          sessionId: this.sessionId,
          field: 'checkpoint',
          message: error instanceof Error ? error.message : String(error),
        }),
    });
  }

  /** The session this run belongs to; follows an id rotation (D2). */
  get sessionId(): string {
    return this.currentSessionId;
  }

  get active(): boolean {
    return this.state === 'active';
  }

  /**
   * E6, F1: every run ends, also when its owner cannot record how. Once complete(), cancel()
   * or fail() threw, the run sends no more checkpoints and this store treats it as any silent
   * run: its loads repair the turn once the grace has passed (a crash marker, the journal's
   * output kept) and fence the run, its followers end then, and the session takes a new run
   * again. Until then a retried complete(), cancel() or fail() still records the ending.
   */
  get stalled(): boolean {
    return this.state === 'active' && this.endingFailed;
  }

  /**
   * F1: this store's own load found the turn of this stalled run ended (repaired after the
   * grace, or stored as answered before the ending failed): the run is over here. The
   * caller holds the session lock.
   */
  fenceStalled(): void {
    if (this.stalled) this.end('fenced');
  }

  /** D2: the session id rotated; the journal moves with it. Caller holds the lock. */
  async moveTo(newSessionId: string): Promise<void> {
    await this.journal.moveTo(newSessionId);
    this.currentSessionId = newSessionId;
  }

  /** Number of checkpoint saves this run wrote (E4). */
  get checkpointCount(): number {
    return this.checkpoint.saveCount;
  }

  start(): void {
    this.checkpoint.start();
  }

  /** Stops the periodic checkpoint, awaiting one in flight (C2, E4). */
  stopCheckpoint(): Promise<void> {
    return this.checkpoint.stop();
  }

  async append(event: JournalEventInput): Promise<JournalRecord> {
    assertJournalEventShape(event);
    // D4, E6: a run that ended (by its own complete, cancel or fail) or lost its turn to
    // another instance refuses output: acknowledged, it would reach no reader.
    if (this.state !== 'active') throw this.refusal();
    this.eventIds.take(this.runId, event.eventId);
    try {
      const record = await this.journal.append(event);
      if (record.type === 'tool_result') this.checkpoint.recordActivity();
      return record;
    } catch (error) {
      // Refused as invalid before anything was written: the event id is free again.
      if (
        InvalidInputError.isInstance(error) ||
        InvalidIdError.isInstance(error) ||
        LimitExceededError.isInstance(error)
      ) {
        this.eventIds.release(event.eventId);
      }
      // Sealed by someone else (a cancel from another process) or taken over by a repair
      // (RunTakenOverError, of the same family): this run is over here too.
      if (JournalSealedError.isInstance(error) && this.state === 'active') {
        this.end('fenced');
        void this.checkpoint.stop();
      }
      // B8: another instance deleted the session; nothing of this run may stay behind.
      if (this.journal.isDeleted && this.state === 'active') this.deletedElsewhere();
      throw error;
    }
  }

  recordActivity(): void {
    this.checkpoint.recordActivity();
  }

  /** The typed refusal of an append once the run is no longer active (D4, E6, B8). */
  private refusal(): Error {
    if (this.journal.isDeleted) {
      return new RunNotActiveError(this.sessionId, this.runId, 'its session was deleted');
    }
    const state = this.journal.terminalState;
    if (this.state === 'finished' || isFinalState(state)) {
      return new JournalSealedError(this.runId, state ?? 'ended');
    }
    return new RunTakenOverError(this.sessionId, this.runId);
  }

  async complete(input: CompleteRunInput = {}): Promise<Session> {
    if (this.state === 'fenced' && !this.journal.isDeleted) {
      assertCompleteInput(input, this.host.options.clock.now());
      await this.checkpoint.stop();
      throw this.fencedOut();
    }
    if (this.state !== 'active') {
      throw new RunNotActiveError(this.sessionId, this.runId, `it is already ${this.state}`);
    }
    // Before the checkpoint stops: a refused input leaves the run exactly as it was.
    assertCompleteInput(input, this.host.options.clock.now());
    return this.endingOrStalled(() => this.completeNow(input));
  }

  private async completeNow(input: CompleteRunInput): Promise<Session> {
    await this.checkpoint.stop();
    await this.journal.idle();
    return this.host.locks.withLock(this.sessionId, async () => {
      const entry = await this.host.entryFor(this.sessionId);
      for (let attempt = 1; ; attempt++) {
        try {
          return await this.completeLocked(entry, input);
        } catch (error) {
          if (!RevisionConflictError.isInstance(error) || attempt >= MAX_CONFLICT_ATTEMPTS) {
            throw error;
          }
          // Another instance wrote the session (a checkpoint-free edit, a rename of the
          // title): learn what it wrote, then check the fence again and re-apply.
          if ((await this.host.refreshIfClean(entry)) === 'deleted') {
            this.deletedElsewhere();
            throw new RunNotActiveError(this.sessionId, this.runId, 'its session was deleted');
          }
        }
      }
    });
  }

  private async completeLocked(entry: CacheEntry, input: CompleteRunInput): Promise<Session> {
    const session = entry.session;
    const pending = session.pending;
    if (pending?.streamId !== this.runId) {
      this.end('fenced');
      throw this.fencedOut();
    }
    await writeCompletedTurn(
      this.host,
      entry,
      { sessionId: this.sessionId, runId: this.runId, pending },
      input,
    );
    // E5: seal the journal after the transcript is durable, then mark the turn completed.
    // A follower on another instance may have sealed it already, from the stored turn
    // (closeAnsweredRun): completed all the same.
    if (this.journal.terminalState !== 'completed') {
      await this.journal.append({ type: 'done' }).catch((error: unknown) => {
        if (!JournalSealedError.isInstance(error) || this.journal.terminalState !== 'completed') {
          throw error;
        }
      });
    }
    this.end('finished');
    this.host.emit({
      type: 'run',
      sessionId: this.sessionId,
      runId: this.runId,
      state: 'completed',
    });
    await this.host.markTurnCompleted(this.sessionId);
    return session;
  }

  cancel(): Promise<CancelOutcome> {
    return this.interrupt('cancel');
  }

  async fail(error: { message: string; code?: string }): Promise<CancelOutcome> {
    return this.interrupt('error', failureOf(error));
  }

  /** Marks the run fenced out without touching storage (its session was deleted, B8). */
  abandon(): Promise<void> {
    this.journal.markDeleted();
    this.end('fenced');
    return this.checkpoint.stop();
  }

  private deletedElsewhere(): void {
    this.journal.markDeleted();
    this.end('fenced');
    void this.checkpoint.stop();
    this.host.forgetDeleted(this.sessionId);
  }

  /**
   * Runs one of the run's endings; if it throws while the run is still active, the run is
   * stalled (see `stalled`): its checkpoints were stopped, and nothing would end it else.
   */
  private async endingOrStalled<T>(ending: () => Promise<T>): Promise<T> {
    try {
      return await ending();
    } catch (error) {
      if (this.state === 'active') this.endingFailed = true;
      throw error;
    }
  }

  private async interrupt(
    kind: 'cancel' | 'error',
    error?: { message: string; code?: string },
  ): Promise<CancelOutcome> {
    if (this.state === 'finished') return { cancelled: false, reason: 'already-finished' };
    if (this.state === 'fenced') return { cancelled: false, reason: 'not-active' };
    return this.endingOrStalled(() => this.interruptNow(kind, error));
  }

  private async interruptNow(
    kind: 'cancel' | 'error',
    error?: { message: string; code?: string },
  ): Promise<CancelOutcome> {
    // E6: the deadline for the run's appends in flight counts from this call.
    const appendsSettled = appendsSettleInTime(this.host, this.journal);
    await this.checkpoint.stop();
    return this.host.locks.withLock(this.sessionId, async () => {
      if (this.state !== 'active') {
        return {
          cancelled: false,
          reason: this.state === 'finished' ? 'already-finished' : 'not-active',
        };
      }
      const entry = await this.host.entryFor(this.sessionId);
      // D4, E6: this cache may not have seen another instance repair the turn, or answer a
      // later one; what the cancel does depends on what storage holds now. A session deleted
      // meanwhile is left to the journal's append below, which also removes what this run
      // wrote (B8).
      await this.host.refreshIfClean(entry);
      // Set once an attempt wrote the journal record and then lost its session write.
      let recordWritten = false;
      for (let attempt = 0; ; attempt++) {
        if (entry.session.pending?.streamId !== this.runId) {
          this.end('fenced');
          // Another instance's repair ended the turn: the cancel (or failure) still decides
          // how the turn ends while it is the last one, never once a later turn answered.
          const taken = await endRepairedTurn(
            this.host,
            entry,
            this.journal,
            this.runId,
            kind,
            error,
            recordWritten,
          );
          if (taken !== null) return taken;
          // Ended for good elsewhere (another instance's cancel, a completion) or merely
          // taken over (a crash repair, a later turn): the caller learns which.
          return {
            cancelled: false,
            reason: isFinalState(this.journal.terminalState) ? 'already-finished' : 'not-active',
          };
        }
        try {
          const outcome = await interruptPendingTurn(
            this.host,
            entry,
            this.journal,
            kind,
            error,
            appendsSettled,
          );
          if (outcome.cancelled) {
            this.end('finished');
          } else if (outcome.reason === 'already-finished') {
            // D4, E6: the journal was sealed by another instance (its cancel, its repair):
            // this run no longer owns the turn. Learn what that instance wrote.
            this.end('fenced');
            if ((await this.host.refreshIfClean(entry)) === 'deleted') this.deletedElsewhere();
          }
          return outcome;
        } catch (cause) {
          // B8: the journal found the session deleted by another instance (its first record).
          // The run ends either way; a journal that could not be removed is still reported.
          if (this.journal.isDeleted) {
            this.deletedElsewhere();
            if (!RunNotActiveError.isInstance(cause)) throw cause;
            return { cancelled: false, reason: 'not-active' };
          }
          if (!RevisionConflictError.isInstance(cause) || attempt + 1 >= MAX_CONFLICT_ATTEMPTS) {
            throw cause;
          }
          // The record went in before the session write that lost (interruptPendingTurn).
          recordWritten = true;
          // Another instance wrote the session: learn what it wrote and check the fence again.
          if ((await this.host.refreshIfClean(entry)) === 'deleted') {
            this.deletedElsewhere();
            return { cancelled: false, reason: 'not-active' };
          }
        }
      }
    });
  }

  private async checkpointSave(): Promise<void> {
    await this.host.locks.withLock(this.sessionId, async () => {
      if (this.state !== 'active') return;
      const entry = await this.host.entryFor(this.sessionId);
      try {
        await this.writeHeartbeat(entry);
      } catch (error) {
        if (!RevisionConflictError.isInstance(error)) throw error;
        // Another instance wrote the session (a cancel from another server, a recovery):
        // re-read it; if our stream is no longer the active one, this run is fenced out.
        if ((await this.host.refreshIfClean(entry)) === 'deleted') {
          this.deletedElsewhere();
          return;
        }
        if (entry.session.pending?.streamId !== this.runId) {
          this.end('fenced');
          void this.checkpoint.stop();
          return;
        }
        await this.writeHeartbeat(entry);
      }
    });
  }

  private async writeHeartbeat(entry: CacheEntry): Promise<void> {
    const pending = entry.session.pending;
    if (pending?.streamId !== this.runId) return;
    const previous = pending.heartbeatAt;
    pending.heartbeatAt = this.host.options.clock.now();
    try {
      await this.host.write(entry, { skipIndex: true });
    } catch (cause) {
      if (previous === undefined) delete pending.heartbeatAt;
      else pending.heartbeatAt = previous;
      throw cause;
    }
    this.host.emit({ type: 'checkpoint', sessionId: this.sessionId, runId: this.runId });
  }

  /**
   * D4: fenced out. The turn was ended elsewhere (a repair, a cancel) with the output
   * appended before that; the run writes nothing more, to the journal or the session.
   */
  private fencedOut(): RunNotActiveError {
    return new RunNotActiveError(
      this.sessionId,
      this.runId,
      "its stream is no longer the session's active stream (its turn was ended by another instance)",
    );
  }

  private end(state: 'finished' | 'fenced'): void {
    this.state = state;
    this.host.runEnded(this);
  }
}
