import { randomBytes } from 'node:crypto';
import type { AdapterContext } from './context.js';
import { isNotFound, toBackendError } from './errors.js';
import { holdToken, releaseToken } from './file-lock.js';
import { writeAllBuffersNow } from './file-system.js';
import { closeLog, createLogFile, discardSpare, type OpenLog, syncJournals } from './log-file.js';
import type { LogSink } from './log-sink.js';

/**
 * Logs are preallocated (log-file.ts); a full log is retired (its journals written and
 * fsynced, the file removed) and the next one, prepared meanwhile, takes over. The first
 * log of a process is small and each next one twice the size, up to MAX_LOG_BYTES: a
 * process that journals little writes few zeros, a busy one retires rarely (retiring
 * fsyncs every journal the log covers; 100 streams at 8 MiB meant 100 fsyncs per ~7,600
 * appends). A replay after a crash reads the logs left, usually one or two.
 */
const FIRST_LOG_BYTES = 256 * 1024;
const MAX_LOG_BYTES = 32 * 1024 * 1024;
/** Flushes of the log in flight at once (more measured no faster here, four slower). */
const MAX_FLUSHES_IN_FLIGHT = 2;

/**
 * E2 group commit across journals. Each run has its own journal file, and core appends to one
 * run at a time, so flushes shared inside one journal would rarely be shared at all. Instead,
 * a `group` append writes its frames to this process's group-commit log
 * (`wal/<pid>-<token>-<n>.log`); one fdatasync of the log makes the appends of every run that
 * arrived meanwhile durable at once, and each append resolves after it. The journal file gets
 * the frames shortly after (journal-writer.ts, unapplied-frames.ts).
 *
 * A log is retired once full (and on `close()`): the journals it covers are written and
 * fdatasynced, then it is removed. After a crash or a power loss, `open()`
 * replays the logs of dead processes into their journals (log-replay.ts). Only one log file
 * is written at a time (up to two fdatasync calls of it in flight); retiring the previous
 * one runs in the background.
 */
export class GroupCommitLog {
  private readonly context: AdapterContext;
  private readonly token = randomBytes(8).toString('hex');
  private current: OpenLog | null = null;
  /** The next log, being prepared once the current one is half full. */
  private spare: Promise<OpenLog> | null = null;
  private nextLogBytes = FIRST_LOG_BYTES;
  private sequence = 0;
  private queue: QueuedEntry[] = [];
  private running: Promise<void> | null = null;
  private retiring: Array<Promise<void>> = [];
  /** A retired log whose journals could not be fsynced: kept on disk, reported by checkpoint. */
  private retireFailure: unknown = null;
  /** Set after a failed log write: appends stop using the log and flush their journal. */
  private failure: unknown = null;
  /** The last batch's write (offset taken, bytes written, fdatasync started), in order. */
  private writeTail: Promise<unknown> = Promise.resolve();
  /** Set when entries of a log could not be written to their journal: logs stay on disk. */
  private keepLogs: unknown = null;

  constructor(context: AdapterContext) {
    this.context = context;
    holdToken(this.token);
  }

  /** Whether `name` (a file in `wal/`) is one of this log's files. */
  ownsLogFile(name: string): boolean {
    return name.startsWith(`${process.pid}-${this.token}-`);
  }

  /** Whether `group` appends may go through the log (false after a log write failed). */
  get usable(): boolean {
    return this.failure === null;
  }

  /**
   * Resolves once `logFrame` (a log entry, encodeLogEntryFrame) is durable in the log;
   * `journal` is synced before the log goes.
   */
  commit(logFrame: Uint8Array, journal: LogSink): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ bytes: logFrame, journal, resolve, reject });
      // pump() always waits a turn before it looks at the queue, so `running` is set before
      // it can end; an entry queued after its last look starts it again (pump's finally).
      this.running ??= this.pump();
    });
  }

  /**
   * Entries durable here could not be written to their journal: no log of this process is
   * removed from now on, so the next open replays them; `checkpoint` and `close` report it.
   */
  keepForReplay(error: unknown): void {
    this.keepLogs ??= error;
    this.retireFailure ??= error;
  }

  /** C1: makes every journal the log covers durable by itself. */
  async checkpoint(): Promise<void> {
    await this.idle();
    const current = this.current;
    if (current) {
      const journals = [...current.journals];
      current.journals.clear();
      try {
        await syncJournals(this.context, journals);
      } catch (error) {
        // Still covered by this log only: it must not be retired without them.
        for (const journal of journals) current.journals.add(journal);
        throw error;
      }
    }
    await this.settleRetiring();
  }

  /** Retires the log for good: journals fsynced, file removed. */
  async close(): Promise<void> {
    await this.idle();
    const current = this.current;
    this.current = null;
    if (current) this.startRetiring(current);
    const spare = this.spare;
    this.spare = null;
    if (spare) this.retiring.push(discardSpare(this.context, spare));
    releaseToken(this.token);
    await this.settleRetiring();
  }

  private startRetiring(log: OpenLog): void {
    this.retiring.push(
      this.retire(log).catch((error: unknown) => {
        // The log stays on disk, so a restart replays it; the next sync() reports the failure.
        this.retireFailure = error;
      }),
    );
  }

  private async settleRetiring(): Promise<void> {
    const pending = this.retiring;
    this.retiring = [];
    await Promise.all(pending);
    const failure = this.retireFailure;
    this.retireFailure = null;
    if (failure !== null) throw toBackendError(failure, 'retire the group-commit log');
  }

  private async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  private async pump(): Promise<void> {
    try {
      await this.writeQueued();
    } finally {
      this.running = null;
      // Defensive: writeQueued looks at the queue a full turn after it resumed appends, so
      // none should come in between; one that did saw `running` set and started nothing.
      if (this.queue.length > 0) this.running = this.pump();
    }
  }

  /**
   * Flushes what is queued until nothing is queued or in flight. Up to two flushes are in
   * flight at once: when a flush ends with none other running, half of its appends resume
   * first and their next appends are flushed while the other half resumes and works, so the
   * streams form two groups that take turns, each group's CPU work overlapping the other's
   * flush, and the disk always has the next flush queued behind the current one. (With one
   * flush at a time, resuming 100 streams and flushing them alternated: the event loop
   * idled for a third of the time; this runs 100 streams about 20% faster.)
   */
  private async writeQueued(): Promise<void> {
    const inFlight: Array<Promise<QueuedEntry[] | null>> = [];
    await nextTurn();
    while (this.queue.length > 0 || inFlight.length > 0) {
      if (this.queue.length > 0 && inFlight.length < MAX_FLUSHES_IN_FLIGHT) {
        inFlight.push(this.flush(this.takeBatch(), inFlight.at(-1) ?? null));
        continue;
      }
      const durable = (await inFlight.shift()) ?? [];
      if (inFlight.length === 0 && durable.length >= 2) {
        this.resume(durable.splice(0, Math.ceil(durable.length / 2)));
        await nextTurn();
        if (this.queue.length > 0) inFlight.push(this.flush(this.takeBatch(), null));
      }
      this.resume(durable);
      await nextTurn();
    }
  }

  private resume(entries: readonly QueuedEntry[]): void {
    for (const entry of entries) {
      entry.resolve();
      entry.settled?.();
    }
  }

  /**
   * Writes and flushes one batch; resolves with it once durable, or with null once its
   * appends are rejected. `previous` is the flush in flight before it: this batch's bytes
   * follow its bytes in the log, and a replay stops at the first bad frame, so when that
   * flush fails this one fails too even if its own fdatasync succeeded (after a failed
   * fdatasync the kernel may have dropped the earlier pages).
   */
  private async flush(
    batch: QueuedEntry[],
    previous: Promise<QueuedEntry[] | null> | null,
  ): Promise<QueuedEntry[] | null> {
    // Batches write in the order they were taken, each after the one before has written
    // and started its fdatasync (which then covers that one's bytes too).
    const writing = this.writeTail.then(() => this.write(batch));
    this.writeTail = writing.catch(() => undefined);
    try {
      const { flushed } = await writing;
      await flushed;
    } catch (error) {
      this.failure ??= error;
    }
    const before = previous === null ? batch : await previous;
    if (this.failure !== null || before === null) {
      const failure = toBackendError(this.failure, 'write the group-commit log');
      for (const entry of batch) {
        entry.reject(failure);
        entry.settled?.();
      }
      return null;
    }
    return batch;
  }

  /**
   * Takes the batch's place in the log, writes it and starts its fdatasync (`flushed`) on
   * the log's handle whose turn it is. The journals it covers are recorded first, and the
   * batch counts as unsettled until its last append resumes or is rejected: a retire that
   * starts meanwhile waits for that, then syncs those journals with the batch's frames.
   */
  private async write(batch: QueuedEntry[]): Promise<{ flushed: Promise<void> }> {
    if (this.failure !== null) throw this.failure;
    const buffers = batch.map((entry) => entry.bytes);
    let length = 0;
    for (const buffer of buffers) length += buffer.length;
    const log = await this.logFor(length);
    const position = log.size;
    log.size += length;
    for (const entry of batch) log.journals.add(entry.journal);
    trackUntilSettled(log, batch);
    const written = writeAllBuffersNow(log.handle, buffers, position);
    if (written !== undefined) await written;
    const sync = log.syncHandles[log.nextSync];
    log.nextSync = log.nextSync === 0 ? 1 : 0;
    // Two flushes in flight take the two handles; this wait is a guard, not the usual path.
    if (sync.flight !== null) await sync.flight.catch(() => undefined);
    const flushed = sync.handle.datasync();
    sync.flight = flushed;
    const done = () => {
      if (sync.flight === flushed) sync.flight = null;
    };
    flushed.then(done, done);
    return { flushed };
  }

  private takeBatch(): QueuedEntry[] {
    const limit = this.context.options.journalBatchBytes;
    const batch = [this.queue.shift() as QueuedEntry];
    let bytes = (batch[0] as QueuedEntry).bytes.length;
    while (this.queue.length > 0) {
      const next = this.queue[0] as QueuedEntry;
      if (bytes + next.bytes.length > limit) break;
      bytes += next.bytes.length;
      batch.push(this.queue.shift() as QueuedEntry);
    }
    return batch;
  }

  /**
   * The log `bytes` more go to: the current one while they fit in what it preallocated
   * (a batch larger than a whole log goes to an empty one, which grows), else the next.
   */
  private async logFor(bytes: number): Promise<OpenLog> {
    let log = this.current;
    if (log !== null && log.size + bytes > log.capacity && log.size > log.start) {
      this.current = null;
      this.startRetiring(log);
      log = null;
    }
    if (log === null) {
      const spare = this.spare;
      this.spare = null;
      log = (await spare?.catch(() => null)) ?? (await this.create());
      this.current = log;
    }
    if (this.spare === null && log.size - log.start > (log.capacity - log.start) / 2) {
      const spare = this.create();
      // Awaited when it takes over; a failure then means creating one on the spot.
      spare.catch(() => undefined);
      this.spare = spare;
    }
    return log;
  }

  private create(): Promise<OpenLog> {
    const bytes = this.nextLogBytes;
    this.nextLogBytes = Math.min(bytes * 2, MAX_LOG_BYTES);
    const name = `${process.pid}-${this.token}-${this.sequence++}`;
    return createLogFile(this.context, name, { pid: process.pid, token: this.token }, bytes);
  }

  private async retire(log: OpenLog): Promise<void> {
    await Promise.all([...log.unsettled]);
    await closeLog(log);
    await syncJournals(this.context, [...log.journals]);
    if (this.keepLogs !== null) throw this.keepLogs;
    try {
      await this.context.fileSystem.unlink(log.path);
    } catch (error) {
      if (!isNotFound(error)) throw toBackendError(error, `remove ${log.path}`);
    }
  }
}

function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

interface QueuedEntry {
  readonly bytes: Uint8Array;
  readonly journal: LogSink;
  resolve(): void;
  reject(error: unknown): void;
  /** Set once written to a log: counts this entry out of the batch's `unsettled`. */
  settled?: () => void;
}

/**
 * Adds the batch to `log.unsettled` until each of its entries called `settled` (after its
 * resolve or reject, so the journal has the entry's frames before a retire syncs it).
 */
function trackUntilSettled(log: OpenLog, batch: QueuedEntry[]): void {
  let remaining = batch.length;
  let release!: () => void;
  const unsettled = new Promise<void>((resolve) => {
    release = resolve;
  });
  log.unsettled.add(unsettled);
  const settled = () => {
    remaining--;
    if (remaining > 0) return;
    log.unsettled.delete(unsettled);
    release();
  };
  for (const entry of batch) entry.settled = settled;
}
