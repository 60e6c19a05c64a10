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
import { JournalWriters } from './journal-writers.js';
import { JOURNAL_SUFFIX } from './layout.js';
import { unappliedRecords } from './unapplied-frames.js';

/**
 * E2/E3: one append-only file of framed batches per run (`journals/<session>/<run>.journal`).
 * Appends go through one `JournalWriter` per journal, which group-commits them; reads need no
 * lock: a batch being written shows up as a torn tail and is ignored, and batches durable in
 * the group-commit log but not yet in the file are added from this process's memory.
 */
export class JournalStore {
  private readonly context: AdapterContext;
  private readonly log: GroupCommitLog;
  private readonly writers = new JournalWriters();
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
    // A writer exists only for valid ids: a streamed event skips the id checks.
    const writer = this.writers.get(sessionId, runId) ?? this.newWriter(sessionId, runId);
    assertRecords(records);
    if (durability !== 'none' && durability !== 'group' && durability !== 'each') {
      throw new InvalidInputError(`fs adapter: unknown journal durability ${String(durability)}`);
    }
    return writer.append(records, durability);
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
    return writer;
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
