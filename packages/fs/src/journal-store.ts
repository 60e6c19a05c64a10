import { dirname } from 'node:path';
import type { AppendLogResult, LogDurability, LogReadResult, LogRecordInput } from '@keepsake/core';
import { InvalidInputError } from '@keepsake/core';
import { type AdapterContext, makeDirectory, removeDirectoryIfEmpty } from './context.js';
import { DeadLogWatch } from './dead-log-watch.js';
import { isNotFound, toBackendError } from './errors.js';
import type { FileStats } from './file-system.js';
import type { GroupCommitLog } from './group-commit-log.js';
import { assertSafeId, decodeName } from './id-encoding.js';
import { parseJournal } from './journal-format.js';
import type { KnownTail } from './journal-tail.js';
import { JournalWriter } from './journal-writer.js';
import { JournalWriters } from './journal-writers.js';
import { JOURNAL_SUFFIX } from './layout.js';
import { OtherProcessLogs } from './other-process-logs.js';
import { continuingRecords } from './pending-batches.js';
import { captureUnapplied } from './unapplied-frames.js';

/**
 * E2/E3: one append-only file of framed batches per run (`journals/<session>/<run>.journal`).
 * Appends go through one `JournalWriter` per journal, which group-commits them; reads need no
 * lock: a batch being written shows up as a torn tail and is ignored, and batches durable in
 * a group-commit log but not yet in the file are added from this process's memory or, while
 * another writer holds the journal, from the logs of other processes (see `read`).
 */
export class JournalStore {
  private readonly context: AdapterContext;
  private readonly log: GroupCommitLog;
  private readonly writers = new JournalWriters();
  private readonly deadLogs: DeadLogWatch;
  private readonly otherLogs: OtherProcessLogs;
  /** Tails the latest reads learned of journals this process has no writer for yet. */
  private readonly learned = new Map<string, KnownTail>();

  constructor(context: AdapterContext, log: GroupCommitLog) {
    this.context = context;
    this.log = log;
    this.deadLogs = new DeadLogWatch(context);
    this.otherLogs = new OtherProcessLogs(context, (name) => log.ownsLogFile(name));
  }

  append(
    sessionId: string,
    runId: string,
    records: LogRecordInput[],
    durability: LogDurability,
  ): Promise<AppendLogResult> {
    // A writer exists only for valid ids: a streamed event skips the id checks.
    const writer = this.writers.get(sessionId, runId) ?? this.newWriter(sessionId, runId);
    assertRecords(records);
    if (durability !== 'none' && durability !== 'group' && durability !== 'each') {
      throw new InvalidInputError(`fs adapter: unknown journal durability ${String(durability)}`);
    }
    return writer.append(records, durability);
  }

  /**
   * Every record whose append resolved before this call began, in order (E2, E5). Records can
   * be in three places: the file; this process's waiting frames (unapplied-frames.ts); the
   * group-commit log of another process (or another adapter of this one) that holds the
   * journal. Frames move from the last two into the file and are then forgotten (dropped
   * from memory, or their log retired), at any moment, never the other way. So the last two
   * are looked at FIRST and the file after: whatever moved in between is in the file by the
   * time it is read. (Read the other way round, a frame could be written and forgotten
   * between the two looks and be in neither: completed answers came out truncated.)
   */
  async read(
    sessionId: string,
    runId: string,
    afterSequence: number,
    limit: number,
  ): Promise<LogReadResult> {
    assertSafeId(sessionId, 'session');
    assertSafeId(runId, 'run');
    const paths = this.context.layout.journal(sessionId, runId);
    const path = paths.file;
    // A process that died may hold this journal's latest appends in its log only: replayed
    // into the file here (its logs are also read below while its lock stands).
    await this.deadLogs.catchUp(true);
    const elsewhere = (await this.heldElsewhere(sessionId, runId, paths.lock))
      ? await this.otherLogs.batchesOf(sessionId, runId)
      : [];
    const waiting = captureUnapplied(this.context.fileSystem, path);
    const { fileSystem, segments } = this.context;
    // On a local disk the file is stat'ed around the read: the same file both times (inode,
    // size, mtime), and whole, makes what the read parsed a tail a takeover can trust.
    const statNow = segments.onLocalDisk ? fileSystem.statSync?.bind(fileSystem) : undefined;
    const before = statNow === undefined ? null : statOrNull(statNow, path);
    let bytes: Uint8Array;
    try {
      bytes = await this.context.fileSystem.readFile(path);
    } catch (error) {
      if (!isNotFound(error)) throw toBackendError(error, `read journal ${path}`);
      if (elsewhere.length > 0) this.otherLogs.settle(sessionId, runId, null, 0);
      return { exists: false, records: [], tornTail: false };
    }
    const parsed = parseJournal(bytes);
    if (elsewhere.length > 0) {
      this.otherLogs.settle(sessionId, runId, parsed.nonce, parsed.lastSequence);
    }
    const after = statNow === undefined ? null : statOrNull(statNow, path);
    if (
      before !== null &&
      after !== null &&
      before.ino === after.ino &&
      before.size === after.size &&
      before.mtimeMs === after.mtimeMs &&
      bytes.length === after.size &&
      !parsed.torn &&
      elsewhere.length === 0 &&
      waiting.length === 0
    ) {
      // Written by another process or an earlier one: nothing is known to be durable.
      this.learnTail(sessionId, runId, {
        inode: after.ino,
        size: parsed.validLength,
        lastSequence: parsed.lastSequence,
        nonce: parsed.nonce,
        linked: false,
        covered: 0,
        mtimeMs: after.mtimeMs,
      });
    }
    const records: LogRecordInput[] = [];
    const keep = (record: LogRecordInput) => {
      if (record.sequence > afterSequence && records.length < limit) records.push(record);
    };
    for (const batch of parsed.batches) for (const record of batch.records) keep(record);
    // Other processes' batches first: of two starting at one sequence, this process's count.
    const pending = [...elsewhere, ...waiting];
    for (const record of continuingRecords(pending, parsed.nonce, parsed.lastSequence)) {
      keep(record);
    }
    return { exists: true, records, tornTail: parsed.torn };
  }

  /**
   * Whether a writer other than this adapter's may hold frames of the journal that its file
   * lacks: only while it holds the journal's lock (a writer writes them all to the file
   * before it lets go), so only while the lock file exists and is not this adapter's.
   */
  private async heldElsewhere(sessionId: string, runId: string, lock: string): Promise<boolean> {
    if (this.writers.get(sessionId, runId)?.holdsJournal) return false;
    const { fileSystem, segments } = this.context;
    try {
      // On a local disk at once: one look at a cached entry, not a thread-pool round trip.
      if (segments.onLocalDisk && fileSystem.lstatSync !== undefined) fileSystem.lstatSync(lock);
      else await fileSystem.lstat(lock);
      return true;
    } catch (error) {
      if (isNotFound(error)) return false;
      throw toBackendError(error, `look at journal lock ${lock}`);
    }
  }

  async list(sessionId: string): Promise<string[]> {
    assertSafeId(sessionId, 'session');
    const directory = this.context.layout.sessionJournals(sessionId);
    let names: string[];
    try {
      names = await this.context.fileSystem.readdir(directory);
    } catch (error) {
      if (isNotFound(error)) return [];
      throw toBackendError(error, `list journals ${directory}`);
    }
    return names
      .filter((name) => name.endsWith(JOURNAL_SUFFIX))
      .map((name) => decodeName(name.slice(0, -JOURNAL_SUFFIX.length)))
      .filter((id): id is string => id !== null)
      .sort();
  }

  /** B8: removes every journal of a session, each under its lock so no append interleaves. */
  async deleteAll(sessionId: string, durable: boolean): Promise<void> {
    for (const runId of await this.list(sessionId)) await this.unlink(sessionId, runId);
    await this.removeDirectory(sessionId, durable);
  }

  /** B8: removes one run's journal under its lock; nothing when it does not exist. */
  async deleteOne(sessionId: string, runId: string, durable: boolean): Promise<void> {
    // A1: checked before the ids become paths.
    assertSafeId(sessionId, 'session');
    assertSafeId(runId, 'run');
    await this.unlink(sessionId, runId);
    await this.removeDirectory(sessionId, durable);
  }

  private async unlink(sessionId: string, runId: string): Promise<void> {
    const { locks, fileSystem, layout } = this.context;
    const paths = layout.journal(sessionId, runId);
    // This process's writer lets go of the journal; another process's is asked to (signal).
    await this.writers.get(sessionId, runId)?.release();
    await locks.withLock(
      paths.lock,
      () => makeDirectory(fileSystem, paths.directory),
      async () => {
        try {
          await fileSystem.unlink(paths.file);
        } catch (error) {
          if (!isNotFound(error)) throw toBackendError(error, `remove journal ${paths.file}`);
        }
        this.writers.get(sessionId, runId)?.forget();
      },
      true,
    );
  }

  /** The session's journal directory goes once empty; with `durable`, the unlinks are synced. */
  private async removeDirectory(sessionId: string, durable: boolean): Promise<void> {
    const { fileSystem, durability, layout } = this.context;
    const directory = layout.sessionJournals(sessionId);
    const removed = await removeDirectoryIfEmpty(fileSystem, directory);
    if (removed) durability.forget(directory);
    if (!durable) {
      durability.markDirty(removed ? dirname(directory) : directory);
      return;
    }
    // The unlinks are in the directory (when it stays), its removal in the parent; a delete
    // that was not durable may have done either before this one found nothing left to do.
    if (!removed && (await this.exists(directory))) await durability.syncDirectory(directory);
    await durability.syncDirectory(dirname(directory));
  }

  private async exists(path: string): Promise<boolean> {
    try {
      await this.context.fileSystem.stat(path);
      return true;
    } catch (error) {
      if (isNotFound(error)) return false;
      throw toBackendError(error, `stat ${path}`);
    }
  }

  /** Resolves once every queued append has been written and every journal let go (close). */
  async drain(): Promise<void> {
    const released = await Promise.allSettled(this.writers.all().map((writer) => writer.release()));
    const failed = released.find((result) => result.status === 'rejected');
    if (failed) throw failed.reason;
  }

  /** A tail a read learned, for the writer of that journal (now, or once it is made). */
  private learnTail(sessionId: string, runId: string, tail: KnownTail): void {
    const writer = this.writers.get(sessionId, runId);
    if (writer !== undefined) {
      writer.learn(tail);
      return;
    }
    const key = `${sessionId}/${runId}`;
    this.learned.delete(key);
    this.learned.set(key, tail);
    if (this.learned.size > LEARNED_TAILS) {
      this.learned.delete(this.learned.keys().next().value as string);
    }
  }

  private newWriter(sessionId: string, runId: string): JournalWriter {
    assertSafeId(sessionId, 'session');
    assertSafeId(runId, 'run');
    const paths = this.context.layout.journal(sessionId, runId);
    const writer = new JournalWriter(
      this.context,
      { sessionId, runId, paths },
      this.log,
      this.deadLogs,
    );
    this.writers.add(sessionId, runId, writer);
    const key = `${sessionId}/${runId}`;
    const learned = this.learned.get(key);
    if (learned !== undefined) {
      this.learned.delete(key);
      writer.learn(learned);
    }
    return writer;
  }
}

/** How many learned tails JournalStore keeps for writers not made yet. */
const LEARNED_TAILS = 64;

function statOrNull(statNow: (path: string) => FileStats, path: string): FileStats | null {
  try {
    return statNow(path);
  } catch {
    return null;
  }
}

function assertRecords(records: LogRecordInput[]): void {
  if (!Array.isArray(records) || records.length === 0) {
    throw new InvalidInputError('fs adapter: appendLog needs at least one record');
  }
  const first = records[0] as LogRecordInput;
  records.forEach((record, index) => {
    if (
      !Number.isSafeInteger(record.sequence) ||
      record.sequence !== first.sequence + index ||
      record.sequence < 1 ||
      typeof record.text !== 'string'
    ) {
      throw new InvalidInputError(
        'fs adapter: appendLog records need consecutive positive sequences and a text each',
      );
    }
  });
}
