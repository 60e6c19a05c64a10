import type { AppendLogResult, LogDurability, LogRecordInput } from '@keepsake/core';
import type { AdapterContext } from './context.js';
import type { DeadLogWatch } from './dead-log-watch.js';
import { toBackendError } from './errors.js';
import type { GroupCommitLog } from './group-commit-log.js';
import { type ApplyTarget, JournalApplier } from './journal-applier.js';
import { type QueuedAppend, takeBatch } from './journal-batch.js';
import { appendToJournalFile } from './journal-file-append.js';
import {
  type HeldJournal,
  IDLE_MS,
  idleTimerDelay,
  lockCheckDue,
  MAX_HOLD_MS,
  takeHold,
} from './journal-hold.js';
import { fileHolds, type KnownTail } from './journal-tail.js';
import type { JournalPaths } from './layout.js';
import {
  encodeJournalBatchFrame,
  encodeLogEntryFrame,
  encodeLogEntryWithBatch,
} from './records.js';
import { UnappliedFrames } from './unapplied-frames.js';

const APPENDED: AppendLogResult = Object.freeze({ ok: true });

function noop(): void {}

/**
 * Whether another writer left a wait mark. A look that fails (the mark cannot be read) counts
 * as yes: letting go is always safe, while holding on could keep a waiting writer out.
 */
function lookForWaiters(held: HeldJournal): Promise<boolean> {
  return held.lease.wanted().catch(() => true);
}

export interface JournalIdentity {
  readonly sessionId: string;
  readonly runId: string;
  readonly paths: JournalPaths;
}

/**
 * E2 for one journal. Appends queue; one batch at a time is written with a single write,
 * holding the journal's lock file. The writer keeps the lock (a lease) and the file open
 * while appends keep coming, so a streamed event costs one write, not a lock file and an
 * open of its own; it lets go after IDLE_MS without appends, at once when another writer
 * leaves a wait mark, and at least every MAX_HOLD_MS (journal-hold.ts). When an append asks
 * for durability:
 * - `group`: the frames go to the group-commit log, whose one fdatasync is shared with the
 *   appends of every other journal meanwhile (group-commit-log.ts), and are written to the
 *   journal file after it, up to 50 ms later (journal-applier.ts), together with every other batch of the
 *   journal meanwhile (unapplied-frames.ts). This needs the journal's header durable and
 *   everything before the batch durable or in the log; when not (a new journal, earlier
 *   `none` appends, appends of another process), the frames are written to the journal and
 *   the journal itself is fdatasynced, which covers all of it;
 * - `each`: never batched, one fdatasync of the journal per append.
 * Appends arriving while a batch is written form the next batch, at most `journalBatchBytes`
 * (one append alone may exceed it), so a large event does not drag small ones into one long
 * write.
 *
 * The sequence check (`records[0].sequence` must be last + 1) runs under the lock against
 * the tail this process knows, re-read from the file whenever the file's inode or size says
 * another process appended, truncated or re-created it. A failed write or flush is cut off
 * again, so it never shows up later as if it had landed.
 */
export class JournalWriter {
  private readonly context: AdapterContext;
  private readonly identity: JournalIdentity;
  private readonly log: GroupCommitLog;
  private readonly deadLogs: DeadLogWatch;
  private queue: QueuedAppend[] = [];
  private running: Promise<unknown> | null = null;
  private tail: KnownTail | null = null;
  private held: HeldJournal | null = null;
  private idleTimer: ReturnType<typeof setTimeout> | null = null;
  private readonly applier = new JournalApplier(() => this.applyTarget());

  constructor(
    context: AdapterContext,
    identity: JournalIdentity,
    log: GroupCommitLog,
    deadLogs: DeadLogWatch,
  ) {
    this.context = context;
    this.identity = identity;
    this.log = log;
    this.deadLogs = deadLogs;
  }

  /**
   * Whether this writer holds the journal's lock now: then no other writer has frames the
   * file lacks (each writes them all before it lets go), only this one (unapplied-frames.ts).
   */
  get holdsJournal(): boolean {
    return this.held !== null;
  }

  get isIdle(): boolean {
    return this.running === null && this.queue.length === 0 && this.held === null;
  }

  append(records: readonly LogRecordInput[], durability: LogDurability): Promise<AppendLogResult> {
    const firstSequence = (records[0] as LogRecordInput).sequence;
    const lastSequence = (records.at(-1) as LogRecordInput).sequence;
    const held = this.held;
    if (
      held !== null &&
      this.running === null &&
      this.queue.length === 0 &&
      durability === 'group' &&
      this.canGoThroughLog(held, held.tail, held.tail.size) &&
      !lockCheckDue(held, Date.now())
    ) {
      return this.appendThroughLog(held, records, firstSequence, lastSequence);
    }
    const frame = encodeJournalBatchFrame(records);
    return new Promise<AppendLogResult>((resolve, reject) => {
      this.queue.push({ firstSequence, lastSequence, frame, durability, resolve, reject });
      this.kick();
    });
  }

  /**
   * The streaming fast path: a `group` append with nothing queued or running, on a journal
   * held and covered up to its tail, is the batch `writeBatch` would make of it, minus the
   * queue, the pump and their promises (a stream awaits each append, so at 100 streams
   * this is nearly every event). Its journal frame is made inside its log entry, in one
   * allocation. `running` stays set until the log has it, as for a batch.
   */
  private appendThroughLog(
    held: HeldJournal,
    records: readonly LogRecordInput[],
    firstSequence: number,
    lastSequence: number,
  ): Promise<AppendLogResult> {
    const tail = held.tail;
    if (firstSequence !== tail.lastSequence + 1) {
      return Promise.resolve({ ok: false, lastSequence: tail.lastSequence });
    }
    const { sessionId, runId } = this.identity;
    const nonce = tail.nonce as string;
    const { logFrame, journalFrame: frame } = encodeLogEntryWithBatch(
      { nonce, sessionId, runId },
      records,
    );
    const committed = this.log.commit(logFrame, this).then(
      () => {
        const size = tail.size + frame.length;
        const next = { ...tail, lastSequence, size, covered: size };
        held.unapplied ??= new UnappliedFrames(this.context.fileSystem, this.file, nonce);
        held.unapplied.add(frame);
        held.tail = next;
        this.tail = next;
        this.applier.schedule();
        held.lastUsed = Date.now();
        this.idleTimer ??= this.armIdleTimer();
        this.settleFastAppend();
        return APPENDED;
      },
      async (error: unknown) => {
        // As for a failed batch: the tail is re-read under the next lock.
        this.tail = null;
        await this.letGo(false).catch(() => undefined);
        this.settleFastAppend();
        throw toBackendError(error, `append to journal ${this.identity.paths.file}`);
      },
    );
    // Awaited only by release(), which ignores its outcome (the caller has it).
    this.running = committed;
    return committed;
  }

  private settleFastAppend(): void {
    this.running = null;
    this.kick();
  }

  /** Waits for queued appends, then lets go of the journal (close, delete). */
  async release(): Promise<void> {
    for (;;) {
      while (this.running) await this.running.then(noop, noop);
      if (this.queue.length > 0) {
        this.kick();
        continue;
      }
      await this.exclusively(() => this.letGo(true));
      if (this.queue.length === 0 && this.held === null) return;
    }
  }

  /**
   * A tail a read just learned (JournalStore.read), for the next takeover to check with one
   * stat instead of reading and parsing the file again; only while this writer knows none.
   */
  learn(tail: KnownTail): void {
    if (this.tail === null && this.held === null && this.running === null) this.tail = tail;
  }

  /** The journal was deleted: what this process knew of it no longer holds. */
  forget(): void {
    this.tail = null;
  }

  /** The journal file, for the group-commit log (fsynced before the log is retired). */
  get file(): string {
    return this.identity.paths.file;
  }

  /**
   * Writes the frames the group-commit log holds for this journal to the file (before the
   * log is retired, or on `sync()`); resolves at once when none wait.
   */
  writeUnapplied(): Promise<void> {
    return this.applier.all();
  }

  private applyTarget(): ApplyTarget | null {
    const held = this.held;
    if (held === null || held.handle === null || held.unapplied === null) return null;
    return { handle: held.handle, unapplied: held.unapplied, size: held.tail.size };
  }

  /**
   * Runs `task` as the one thing this writer does now (a batch, an apply, letting go);
   * when it ends, whatever became due meanwhile starts.
   */
  private exclusively(task: () => Promise<void>): Promise<void> {
    // Started a microtask later, so `running` is set before any of the task's code runs.
    const running: Promise<void> = Promise.resolve()
      .then(task)
      .finally(() => {
        // The task may have handed the writer on before it ended (pump's last batch).
        if (this.running === running) this.running = null;
        this.kick();
      });
    this.running = running;
    return running;
  }

  private kick(): void {
    if (this.running !== null || this.queue.length === 0) return;
    void this.exclusively(() => this.pump());
  }

  private async pump(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = takeBatch(this.queue, this.context.options.journalBatchBytes);
      try {
        const results = await this.writeBatch(batch);
        // After the last batch the writer is free before its appends resume, so a stream's
        // next append finds it free (the fast path) instead of queuing behind this pump's
        // end, which would keep every later append of the stream on this slower path.
        const handedOn = this.queue.length === 0 && this.keptWithoutLooking();
        if (handedOn) this.running = null;
        for (const [index, append] of batch.entries()) {
          append.resolve(results[index] as AppendLogResult);
        }
        if (handedOn) return;
      } catch (error) {
        // Whatever reached the file is re-read (and a torn tail cut) under the next lock.
        this.tail = null;
        await this.letGo(false).catch(() => undefined);
        const failure = toBackendError(error, `append to journal ${this.identity.paths.file}`);
        for (const append of batch) append.reject(failure);
      }
    }
    // Housekeeping after settled appends, with nobody to report to (kick does not await it):
    // a lock file that cannot be removed must not become an unhandled rejection. Whoever
    // takes the lock next meets the problem and reports it.
    await this.keepOrLetGo().catch(noop);
  }

  /**
   * After a batch, when no look at the lock is due: the journal stays held (no I/O, so the
   * writer can be handed on at once). False when keepOrLetGo must look.
   */
  private keptWithoutLooking(): boolean {
    const held = this.held;
    if (held === null) return true;
    const now = Date.now();
    if (lockCheckDue(held, now)) return false;
    held.lastUsed = now;
    this.idleTimer ??= this.armIdleTimer();
    return true;
  }

  /**
   * After a batch: let go of the journal when another writer waits for it (checked at most
   * every WAIT_CHECK_MS) or it was held for MAX_HOLD_MS; else keep it until IDLE_MS pass
   * without an append.
   */
  private async keepOrLetGo(): Promise<void> {
    const held = this.held;
    if (held === null) return;
    const now = Date.now();
    let letGo = now - held.since > MAX_HOLD_MS;
    if (!letGo && lockCheckDue(held, now)) {
      held.checkedAt = now;
      letGo = await lookForWaiters(held);
    }
    if (letGo) {
      await this.letGo(false);
      return;
    }
    held.lastUsed = now;
    // One timer for a run of batches (not one per streamed event): it re-arms itself until
    // IDLE_MS have passed since the last batch.
    this.idleTimer ??= this.armIdleTimer();
  }

  /**
   * The timer of a held journal between batches: it lets go once IDLE_MS pass without an
   * append, and meanwhile looks for a wait mark whenever a look is due (WAIT_CHECK_MS), so
   * another writer never waits longer for an idle journal than for a busy one.
   */
  private armIdleTimer(): ReturnType<typeof setTimeout> {
    const held = this.held;
    const delay = held === null ? IDLE_MS : idleTimerDelay(held, Date.now());
    const timer = setTimeout(() => {
      this.idleTimer = null;
      const held = this.held;
      // A batch in progress re-arms the timer when it ends (keepOrLetGo).
      if (held === null || this.running !== null || this.queue.length > 0) return;
      const now = Date.now();
      if (now - held.lastUsed >= IDLE_MS) {
        void this.exclusively(() => this.letGo(false).catch(() => undefined));
      } else if (lockCheckDue(held, now)) {
        void this.exclusively(() => this.lookWhileIdle().catch(() => undefined));
      } else {
        this.idleTimer = this.armIdleTimer();
      }
    }, delay);
    timer.unref?.();
    return timer;
  }

  /** Idle, not yet for IDLE_MS: lets go when another writer waits (or MAX_HOLD_MS passed). */
  private async lookWhileIdle(): Promise<void> {
    const held = this.held;
    if (held === null) return;
    const now = Date.now();
    held.checkedAt = now;
    if (now - held.since > MAX_HOLD_MS || (await lookForWaiters(held))) {
      await this.letGo(false);
      return;
    }
    this.idleTimer ??= this.armIdleTimer();
  }

  private clearIdleTimer(): void {
    if (this.idleTimer !== null) clearTimeout(this.idleTimer);
    this.idleTimer = null;
  }

  /**
   * Writes what waits in memory to the file, then closes it and releases the lock. When that
   * write fails, the lock is kept (another writer must not continue the journal without
   * those frames) and letting go is tried again later; `force` (close, delete) lets go
   * anyway: the frames are dropped here, the group-commit log holding them is kept on disk
   * and replayed at the next open, and the failure is thrown.
   */
  private async letGo(force: boolean): Promise<void> {
    this.clearIdleTimer();
    const held = this.held;
    if (held === null) return;
    let failure: unknown = null;
    try {
      await this.applier.all();
    } catch (error) {
      if (await fileHolds(this.context.fileSystem, this.identity.paths.file, held.tail)) {
        // Another writer put them there (the log replayed after a machine crash).
        held.unapplied?.clear();
      } else if (!force) {
        held.lastUsed = Date.now();
        this.idleTimer ??= this.armIdleTimer();
        return;
      } else {
        failure = error;
        held.unapplied?.clear();
        this.log.keepForReplay(error);
      }
      this.tail = null;
    }
    this.applier.cancel();
    this.held = null;
    await held.handle?.close().catch(() => undefined);
    await held.lease.release();
    if (failure !== null) throw failure;
  }

  /** Takes the journal's lock (as a lease) and opens it, unless already held. */
  private async hold(): Promise<HeldJournal> {
    this.held ??= await takeHold(this.context, this.identity.paths, this.tail, this.deadLogs);
    return this.held;
  }

  private async writeBatch(batch: QueuedAppend[]): Promise<AppendLogResult[]> {
    const { fileSystem } = this.context;
    const paths = this.identity.paths;
    // Without an await when the journal is already held: the frames then reach the
    // group-commit log in the same turn as the append, and join its next flush.
    const held = this.held ?? (await this.hold());
    const tail = { ...held.tail };
    const start = tail.size;
    const results: AppendLogResult[] = [];
    const frames: Uint8Array[] = [];
    let durability: LogDurability = 'none';
    for (const append of batch) {
      if (append.firstSequence !== tail.lastSequence + 1) {
        results.push({ ok: false, lastSequence: tail.lastSequence });
        continue;
      }
      frames.push(append.frame);
      tail.lastSequence = append.lastSequence;
      if (append.durability !== 'none' && durability !== 'each') durability = append.durability;
      results.push({ ok: true });
    }
    if (frames.length === 0) return results;
    const joined = frames.length === 1 ? (frames[0] as Uint8Array) : Buffer.concat(frames);
    if (durability === 'group' && this.canGoThroughLog(held, tail, start)) {
      const { sessionId, runId } = this.identity;
      const nonce = tail.nonce as string;
      // A failed log write rejects here, before anything counts as appended.
      await this.log.commit(encodeLogEntryFrame({ nonce, sessionId, runId, frames: joined }), this);
      held.unapplied ??= new UnappliedFrames(fileSystem, paths.file, nonce);
      held.unapplied.add(joined);
      tail.size = start + joined.length;
      tail.covered = tail.size;
      held.tail = tail;
      this.tail = tail;
      this.applier.schedule();
      return results;
    }
    // Written to the file itself: the frames still waiting go first, in order.
    await this.applier.all();
    await appendToJournalFile(this.context, paths, held, tail, joined, durability);
    held.tail = tail;
    this.tail = tail;
    return results;
  }

  /**
   * A `group` batch may rely on the group-commit log alone when the journal's header is
   * durable and everything before the batch is durable or in the log.
   */
  private canGoThroughLog(held: HeldJournal, tail: KnownTail, start: number): boolean {
    return (
      this.log.usable &&
      held.handle !== null &&
      tail.linked &&
      tail.nonce !== null &&
      tail.covered === start
    );
  }
}
