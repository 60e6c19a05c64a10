import type { LogReadResult, LogRecordInput } from '@keepsake/core';
import type { AdapterContext } from './context.js';
import { isNotFound, toBackendError } from './errors.js';
import { decodeFrames } from './framing.js';
import { assertSafeId, decodeName } from './id-encoding.js';
import { parseJournal } from './journal-format.js';
import { JOURNAL_SUFFIX } from './layout.js';
import { readDeadLogs } from './log-replay.js';
import { OtherProcessLogs } from './other-process-logs.js';
import { continuingRecords, type PendingBatch } from './pending-batches.js';
import { decodeJournalBatch } from './records.js';
import { captureUnapplied } from './unapplied-frames.js';

/**
 * Journal reads of a read-only adapter (`fsAdapter({ readOnly: true })`). A writing adapter's
 * open replays the group-commit logs of dead processes into their journals and removes the
 * logs (log-replay.ts); this one reads those logs once, at open, and keeps what the replay
 * would append in memory: a read returns the journal file's records followed by the dead
 * processes' batches that continue it, exactly the records a replay would have left in the
 * file, and writes nothing, takes no lock. A live writer's log is read as a writing adapter
 * reads it (other-process-logs.ts), while that writer holds the journal's lock.
 */
export class ReadOnlyJournals {
  private readonly context: AdapterContext;
  private readonly otherLogs: OtherProcessLogs;
  /** The dead processes' batches by journal (`<session>/<run>`), in replay order. */
  private deadBatches = new Map<string, PendingBatch[]>();
  /** How many dead processes' logs were found at open. */
  deadLogCount = 0;

  constructor(context: AdapterContext) {
    this.context = context;
    // A read-only adapter has no log of its own: every log in `wal/` is another's.
    this.otherLogs = new OtherProcessLogs(context, () => false);
  }

  /** At open: what the dead processes' logs hold, in memory. */
  async loadDeadLogs(): Promise<void> {
    const { deadLogs, byJournal } = await readDeadLogs(this.context);
    this.deadLogCount = deadLogs.length;
    const batches = new Map<string, PendingBatch[]>();
    for (const [key, entries] of byJournal) {
      const found: PendingBatch[] = [];
      for (const { entry } of entries) {
        // As the replay reads them: an entry's batches up to the first that does not decode.
        for (const payload of decodeFrames(entry.frames).payloads) {
          const records = decodeJournalBatch(payload);
          if (records === null || records.length === 0) break;
          found.push({ nonce: entry.nonce, records });
        }
      }
      batches.set(key, found);
    }
    this.deadBatches = batches;
  }

  /** The journals a replay would add records to (they exist as files already). */
  get replayedJournals(): string[] {
    return [...this.deadBatches.keys()];
  }

  async read(
    sessionId: string,
    runId: string,
    afterSequence: number,
    limit: number,
  ): Promise<LogReadResult> {
    assertSafeId(sessionId, 'session');
    assertSafeId(runId, 'run');
    const paths = this.context.layout.journal(sessionId, runId);
    // Logs before the file (journal-store.ts says why): frames move from a log to the file.
    const elsewhere = (await this.lockExists(paths.lock))
      ? await this.otherLogs.batchesOf(sessionId, runId)
      : [];
    // A writing adapter of this process on the same filesystem object: its waiting frames.
    const waiting = captureUnapplied(this.context.fileSystem, paths.file);
    let bytes: Uint8Array;
    try {
      bytes = await this.context.fileSystem.readFile(paths.file);
    } catch (error) {
      if (!isNotFound(error)) throw toBackendError(error, `read journal ${paths.file}`);
      if (elsewhere.length > 0) this.otherLogs.settle(sessionId, runId, null, 0);
      return { exists: false, records: [], tornTail: false };
    }
    const parsed = parseJournal(bytes);
    if (elsewhere.length > 0) {
      this.otherLogs.settle(sessionId, runId, parsed.nonce, parsed.lastSequence);
    }
    const dead = this.deadBatches.get(`${sessionId}/${runId}`) ?? [];
    const continuing = continuingRecords(
      [...dead, ...elsewhere, ...waiting],
      parsed.nonce,
      parsed.lastSequence,
    );
    const records: LogRecordInput[] = [];
    const keep = (record: LogRecordInput) => {
      if (record.sequence > afterSequence && records.length < limit) records.push(record);
    };
    for (const batch of parsed.batches) for (const record of batch.records) keep(record);
    for (const record of continuing) keep(record);
    // A replay that appends cuts the torn tail first; one with nothing to append leaves it.
    return { exists: true, records, tornTail: parsed.torn && continuing.length === 0 };
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

  private async lockExists(lock: string): Promise<boolean> {
    try {
      await this.context.fileSystem.lstat(lock);
      return true;
    } catch (error) {
      if (isNotFound(error)) return false;
      throw toBackendError(error, `look at journal lock ${lock}`);
    }
  }
}
