import { dirname } from 'node:path';
import type { AppendLogResult, LogDurability, LogReadResult, LogRecordInput } from '@keepsake/core';
import { InvalidInputError } from '@keepsake/core';
import { type AdapterContext, makeDirectory, removeDirectoryIfEmpty } from './context.js';
import { DeadLogWatch } from './dead-log-watch.js';
import { isNotFound, toBackendError } from './errors.js';
import type { GroupCommitLog } from './group-commit-log.js';
import { assertSafeId, decodeName } from './id-encoding.js';
import { parseJournal } from './journal-format.js';
import { JournalWriter } from './journal-writer.js';
import { JOURNAL_SUFFIX } from './layout.js';
import { encodeJournalBatchFrame } from './records.js';
import { unappliedRecords } from './unapplied-frames.js';

/**
 * E2/E3: one append-only file of framed batches per run (`journals/<session>/<run>.journal`).
 * Appends go through one `JournalWriter` per journal, which group-commits them; reads need no
 * lock: a batch being written shows up as a torn tail and is ignored, and batches durable in
 * the group-commit log but not yet in the file are added from this process's memory.
 */
const IDLE_WRITERS_KEPT = 1024;

export class JournalStore {
  private readonly context: AdapterContext;
  private readonly log: GroupCommitLog;
  private readonly writers = new Map<string, JournalWriter>();
  private readonly deadLogs: DeadLogWatch;

  constructor(context: AdapterContext, log: GroupCommitLog) {
    this.context = context;
    this.log = log;
    this.deadLogs = new DeadLogWatch(context);
  }

  append(
    sessionId: string,
    runId: string,
    records: LogRecordInput[],
    durability: LogDurability,
  ): Promise<AppendLogResult> {
    assertSafeId(sessionId, 'session');
    assertSafeId(runId, 'run');
    assertRecords(records);
    if (durability !== 'none' && durability !== 'group' && durability !== 'each') {
      throw new InvalidInputError(`fs adapter: unknown journal durability ${String(durability)}`);
    }
    const frame = encodeJournalBatchFrame(records);
    return this.writerFor(sessionId, runId).append({
      firstSequence: (records[0] as LogRecordInput).sequence,
      lastSequence: (records.at(-1) as LogRecordInput).sequence,
      frame,
      durability,
    });
  }

  async read(
    sessionId: string,
    runId: string,
    afterSequence: number,
    limit: number,
  ): Promise<LogReadResult> {
    assertSafeId(sessionId, 'session');
    assertSafeId(runId, 'run');
    const path = this.context.layout.journal(sessionId, runId).file;
    // A process that died may hold this journal's latest appends in its log only.
    await this.deadLogs.catchUp(true);
    let bytes: Uint8Array;
    try {
      bytes = await this.context.fileSystem.readFile(path);
    } catch (error) {
      if (isNotFound(error)) return { exists: false, records: [], tornTail: false };
      throw toBackendError(error, `read journal ${path}`);
    }
    const parsed = parseJournal(bytes);
    const records: LogRecordInput[] = [];
    const keep = (record: LogRecordInput) => {
      if (record.sequence > afterSequence && records.length < limit) records.push(record);
    };
    for (const batch of parsed.batches) for (const record of batch.records) keep(record);
    // Durable appends of this process that are not in the file yet (unapplied-frames.ts).
    const { fileSystem } = this.context;
    for (const record of unappliedRecords(fileSystem, path, parsed.nonce, parsed.lastSequence)) {
      keep(record);
    }
    return { exists: true, records, tornTail: parsed.torn };
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
    await this.unlink(sessionId, runId);
    await this.removeDirectory(sessionId, durable);
  }

  private async unlink(sessionId: string, runId: string): Promise<void> {
    const { locks, fileSystem, layout } = this.context;
    const paths = layout.journal(sessionId, runId);
    // This process's writer lets go of the journal; another process's is asked to (signal).
    await this.writers.get(writerKey(sessionId, runId))?.release();
    await locks.withLock(
      paths.lock,
      () => makeDirectory(fileSystem, paths.directory),
      async () => {
        try {
          await fileSystem.unlink(paths.file);
        } catch (error) {
          if (!isNotFound(error)) throw toBackendError(error, `remove journal ${paths.file}`);
        }
        this.writers.get(writerKey(sessionId, runId))?.forget();
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
    const released = await Promise.allSettled(
      [...this.writers.values()].map((writer) => writer.release()),
    );
    const failed = released.find((result) => result.status === 'rejected');
    if (failed) throw failed.reason;
  }

  private writerFor(sessionId: string, runId: string): JournalWriter {
    // Keyed by the ids (which never hold a `/`), so a streamed event computes no paths.
    const key = writerKey(sessionId, runId);
    let writer = this.writers.get(key);
    // No reordering per event: past the cap, idle writers go oldest first. An idle writer
    // holds no lock and no file, only what it knows of the tail (re-read when needed).
    if (writer) return writer;
    const paths = this.context.layout.journal(sessionId, runId);
    writer = new JournalWriter(this.context, { sessionId, runId, paths }, this.log, this.deadLogs);
    this.writers.set(key, writer);
    if (this.writers.size > IDLE_WRITERS_KEPT) {
      for (const [key, candidate] of this.writers) {
        if (this.writers.size <= IDLE_WRITERS_KEPT) break;
        if (candidate.isIdle) this.writers.delete(key);
      }
    }
    return writer;
  }
}

function writerKey(sessionId: string, runId: string): string {
  return `${sessionId}/${runId}`;
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
