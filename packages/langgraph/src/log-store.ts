import { crc32 } from 'node:zlib';
import type { StorageAdapter } from '@keepsake/core';
import { z } from 'zod';
import { encodeSegment } from './document-ids.js';
import {
  type CheckpointDocument,
  checkpointDocumentSchema,
  type WriteDocument,
  writeDocumentSchema,
} from './documents.js';
import { CheckpointConflictError, CorruptCheckpointError } from './errors.js';

/**
 * The log layout: every checkpoint and every `putWrites` call of one LangGraph thread (all its
 * namespaces) is one record appended to the thread's log, a run journal of the adapter
 * (`appendLog` / `readLog`, E2, E3): session `lg-<thread segment>`, run `langgraph-checkpoints`.
 * A record is `<crc32 hex> <JSON>`: the checksum catches a damaged record on every backend
 * (the fs journal frames carry their own as well). A put is one append, so it is stored whole
 * or not at all (B1); appends name the next sequence, so two instances appending to one thread
 * never overwrite each other: the loser reads what it missed and appends after it (B4).
 * Durable appends use `group` durability: concurrent appends of every thread share one flush.
 *
 * Each instance keeps an index of the threads it read (checkpoints by namespace and id, pending
 * writes merged per task and index as MemorySaver keeps them), and brings it up to date with
 * one `readLog` after the last sequence it knows before answering a read.
 */
export const LOG_RUN_ID = 'langgraph-checkpoints';
/**
 * Records per journal: record `p` of a thread (its position, from 1) is record
 * `p - k × SEGMENT_RECORDS` of journal `k = ⌊(p − 1) / SEGMENT_RECORDS⌋` (run `langgraph-checkpoints`
 * for 0, `langgraph-checkpoints-<k>` after), so reading what was appended since costs at most
 * one journal of this many records, however long the thread. A journal is full at exactly
 * this many records: a writer refused at the last sequence goes on in the next one, and a
 * reader moves on only after the last record, so no record is ever left behind.
 */
export const SEGMENT_RECORDS = 256;

export function segmentRunId(segment: number): string {
  return segment === 0 ? LOG_RUN_ID : `${LOG_RUN_ID}-${segment}`;
}
const READ_PAGE = 1000;
const APPEND_ATTEMPTS = 16;
/** Threads whose index an instance keeps; the least recently used is dropped beyond it. */
const CACHED_THREADS = 256;

export function logSessionId(threadId: string): string {
  return `lg-${encodeSegment(threadId)}`;
}

const quarantineRecordSchema = z.strictObject({
  k: z.literal('q'),
  sequence: z.number().int().positive(),
  location: z.string(),
});
const recordSchema = z.discriminatedUnion('k', [
  z.strictObject({ k: z.literal('c'), d: checkpointDocumentSchema }),
  z.strictObject({ k: z.literal('w'), d: writeDocumentSchema }),
  quarantineRecordSchema,
]);
export type LogRecord = z.infer<typeof recordSchema>;

export function encodeRecord(record: LogRecord): string {
  const json = JSON.stringify(record);
  return `${crc32(json).toString(16).padStart(8, '0')} ${json}`;
}

type Decoded = { ok: true; record: LogRecord } | { ok: false; reason: string };

export function decodeRecord(text: string): Decoded {
  const json = text.slice(9);
  if (text.length < 10 || text[8] !== ' ' || !/^[0-9a-f]{8}$/.test(text.slice(0, 8))) {
    return { ok: false, reason: 'no checksum' };
  }
  if (Number.parseInt(text.slice(0, 8), 16) !== crc32(json)) {
    return { ok: false, reason: 'checksum mismatch' };
  }
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (error) {
    return { ok: false, reason: `not JSON (${(error as Error).message})` };
  }
  const parsed = recordSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return { ok: false, reason: `not a record (${issue?.path.join('.')}: ${issue?.message})` };
  }
  return { ok: true, record: parsed.data };
}

/** One write as the index keeps it: the record holding it, for quarantine. */
export interface IndexedWrite {
  readonly sequence: number;
  readonly taskId: string;
  readonly taskPath: string;
  readonly idx: number;
  readonly channel: string;
  readonly value: WriteDocument['writes'][number]['value'];
}

interface IndexedCheckpoint {
  readonly sequence: number;
  readonly document: CheckpointDocument;
}

interface Pending {
  readonly record: LogRecord;
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

/** One thread's index, in this instance. */
export class ThreadLog {
  readonly threadId: string;
  readonly sessionId: string;
  sequence = 0;
  /** The text of the record at `sequence`: a log deleted and started again differs there. */
  lastText: string | null = null;
  /** Whether a log exists for the thread (false until a read or an append finds one). */
  exists = false;
  private readonly checkpoints = new Map<string, Map<string, IndexedCheckpoint>>();
  private readonly sorted = new Map<string, string[]>();
  private readonly writes = new Map<string, Map<string, IndexedWrite>>();
  private readonly quarantined = new Set<number>();
  /** Records read that do not decode, by sequence, until they are quarantined. */
  readonly damaged = new Map<number, { text: string; reason: string }>();
  readonly pending: Pending[] = [];
  lock: Promise<void> = Promise.resolve();

  constructor(threadId: string) {
    this.threadId = threadId;
    this.sessionId = logSessionId(threadId);
  }

  /** Forgets everything read: the log was deleted, and may have been started again. */
  reset(): void {
    this.sequence = 0;
    this.lastText = null;
    this.exists = false;
    this.checkpoints.clear();
    this.sorted.clear();
    this.writes.clear();
    this.quarantined.clear();
    this.damaged.clear();
  }

  apply(sequence: number, record: LogRecord): void {
    if (this.quarantined.has(sequence)) return;
    if (record.k === 'q') {
      this.quarantined.add(record.sequence);
      this.damaged.delete(record.sequence);
      this.dropSequence(record.sequence);
      return;
    }
    if (record.d.thread_id !== this.threadId) return;
    if (record.k === 'c') {
      const document = record.d;
      let namespace = this.checkpoints.get(document.checkpoint_ns);
      if (namespace === undefined) {
        namespace = new Map();
        this.checkpoints.set(document.checkpoint_ns, namespace);
      }
      // A checkpoint put again under its id is replaced whole, as other savers do.
      namespace.set(document.checkpoint_id, { sequence, document });
      this.sorted.delete(document.checkpoint_ns);
      return;
    }
    const document = record.d;
    const key = `${document.checkpoint_ns}\u0000${document.checkpoint_id}`;
    let writes = this.writes.get(key);
    if (writes === undefined) {
      writes = new Map();
      this.writes.set(key, writes);
    }
    // Per (task, index), as MemorySaver keeps them: a regular write stored first stays, a
    // special write (negative index) is replaced by a later one. The log orders them.
    for (const write of document.writes) {
      const writeKey = `${document.task_id}\u0000${write.idx}`;
      if (write.idx >= 0 && writes.has(writeKey)) continue;
      writes.set(writeKey, {
        sequence,
        taskId: document.task_id,
        taskPath: document.task_path,
        idx: write.idx,
        channel: write.channel,
        value: write.value,
      });
    }
  }

  /** A record quarantined after it was applied (a value that does not deserialize). */
  private dropSequence(sequence: number): void {
    for (const [namespace, checkpoints] of this.checkpoints) {
      for (const [id, entry] of checkpoints) {
        if (entry.sequence === sequence) {
          checkpoints.delete(id);
          this.sorted.delete(namespace);
        }
      }
    }
    for (const writes of this.writes.values()) {
      for (const [key, write] of writes) if (write.sequence === sequence) writes.delete(key);
    }
  }

  checkpoint(namespace: string, checkpointId: string): IndexedCheckpoint | undefined {
    return this.checkpoints.get(namespace)?.get(checkpointId);
  }

  namespaces(): string[] {
    return [...this.checkpoints.keys()];
  }

  /** Checkpoint ids of one namespace, newest first. */
  ids(namespace: string): string[] {
    let ids = this.sorted.get(namespace);
    if (ids === undefined) {
      ids = [...(this.checkpoints.get(namespace)?.keys() ?? [])].sort((a, b) =>
        a < b ? 1 : a > b ? -1 : 0,
      );
      this.sorted.set(namespace, ids);
    }
    return ids;
  }

  pendingWrites(namespace: string, checkpointId: string): IndexedWrite[] {
    return [...(this.writes.get(`${namespace}\u0000${checkpointId}`)?.values() ?? [])];
  }
}

/**
 * The logs of the threads this instance uses, through the adapter's journal primitives only.
 */
export class ThreadLogs {
  private readonly adapter: StorageAdapter;
  private readonly durable: boolean;
  private readonly threads = new Map<string, ThreadLog>();

  constructor(adapter: StorageAdapter, durable: boolean) {
    this.adapter = adapter;
    this.durable = durable;
  }

  /** The thread's index, brought up to date with what is stored (one `readLog`). */
  async current(threadId: string): Promise<ThreadLog> {
    const thread = this.thread(threadId);
    await this.locked(thread, () => this.catchUp(thread));
    await this.quarantineDamaged(thread);
    return thread;
  }

  /** The thread's index as this instance knows it, without reading. */
  thread(threadId: string): ThreadLog {
    let thread = this.threads.get(threadId);
    if (thread === undefined) {
      thread = new ThreadLog(threadId);
      if (this.threads.size >= CACHED_THREADS) {
        const oldest = this.threads.keys().next().value;
        if (oldest !== undefined) this.threads.delete(oldest);
      }
    } else {
      this.threads.delete(threadId);
    }
    this.threads.set(threadId, thread);
    return thread;
  }

  forget(threadId: string): void {
    this.threads.delete(threadId);
  }

  /**
   * Appends one record; concurrent appends to one thread share one `appendLog` call, and
   * durable appends of every thread share the adapter's flush (`group`).
   */
  append(thread: ThreadLog, record: LogRecord): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      thread.pending.push({ record, resolve, reject });
      if (thread.pending.length === 1) {
        void this.locked(thread, () => this.drain(thread)).catch(() => undefined);
      }
    });
  }

  private async drain(thread: ThreadLog): Promise<void> {
    while (thread.pending.length > 0) {
      const batch = thread.pending.splice(0);
      try {
        await this.appendBatch(thread, batch);
        for (const entry of batch) entry.resolve();
      } catch (error) {
        for (const entry of batch) entry.reject(error);
      }
    }
  }

  private async appendBatch(thread: ThreadLog, batch: Pending[]): Promise<void> {
    const texts = batch.map((entry) => encodeRecord(entry.record));
    let done = 0;
    let next = thread.sequence + 1;
    let refused = 0;
    while (done < batch.length) {
      const segment = Math.floor((next - 1) / SEGMENT_RECORDS);
      const first = next - segment * SEGMENT_RECORDS;
      const count = Math.min(batch.length - done, SEGMENT_RECORDS - first + 1);
      const result = await this.adapter.appendLog(
        thread.sessionId,
        segmentRunId(segment),
        texts.slice(done, done + count).map((text, index) => ({ sequence: first + index, text })),
        { durability: this.durable ? 'group' : 'none' },
      );
      if (result.ok) {
        thread.exists = true;
        if (next === thread.sequence + 1) {
          for (let index = 0; index < count; index++) {
            thread.apply(next + index, batch[done + index]!.record);
          }
          thread.sequence = next + count - 1;
          thread.lastText = texts[done + count - 1] ?? null;
        }
        // Else records of another instance lie between: the next read brings the index up
        // to date with them and these, in log order.
        done += count;
        next += count;
        continue;
      }
      if (++refused >= APPEND_ATTEMPTS) {
        throw new CheckpointConflictError(`log ${thread.sessionId}`, APPEND_ATTEMPTS);
      }
      // Another instance appended first: append after its records (B4). A record holds no
      // state derived from the log's tail, so it needs no re-read first; the index reads them
      // at its next catch-up. A log shorter than this index was deleted (deleteThread) since.
      const stored = segment * SEGMENT_RECORDS + result.lastSequence;
      if (stored < thread.sequence) {
        thread.reset();
        await this.catchUp(thread);
      }
      next = Math.max(stored, thread.sequence) + 1;
    }
  }

  private async catchUp(thread: ThreadLog): Promise<void> {
    for (;;) {
      const known = thread.sequence;
      const segment = Math.floor(known / SEGMENT_RECORDS);
      const after = known - segment * SEGMENT_RECORDS;
      let read: Awaited<ReturnType<StorageAdapter['readLog']>>;
      // From the last record this instance read, to see that it is still there: a log
      // deleted (deleteThread) and started again since is read from its start.
      if (known > 0 && after === 0) {
        const previous = await this.adapter.readLog(thread.sessionId, segmentRunId(segment - 1), {
          afterSequence: SEGMENT_RECORDS - 1,
          limit: 1,
        });
        if (previous.records[0]?.text !== thread.lastText) {
          thread.reset();
          continue;
        }
        read = await this.adapter.readLog(thread.sessionId, segmentRunId(segment), {
          afterSequence: 0,
          limit: READ_PAGE,
        });
        if (!read.exists) return;
      } else {
        read = await this.adapter.readLog(thread.sessionId, segmentRunId(segment), {
          afterSequence: Math.max(0, after - 1),
          limit: READ_PAGE,
        });
        if (!read.exists) {
          if (known === 0) return;
          thread.reset();
          continue;
        }
      }
      let records = read.records;
      if (known > 0 && after > 0) {
        const [last] = records;
        if (last === undefined || last.sequence !== after || last.text !== thread.lastText) {
          thread.reset();
          continue;
        }
        records = records.slice(1);
      }
      thread.exists = true;
      for (const { sequence, text } of records) {
        const position = segment * SEGMENT_RECORDS + sequence;
        const decoded = decodeRecord(text);
        if (decoded.ok) thread.apply(position, decoded.record);
        else thread.damaged.set(position, { text, reason: decoded.reason });
        thread.sequence = position;
        thread.lastText = text;
      }
      // A full journal: the next records are in the next one.
      if (records.length > 0 && thread.sequence === (segment + 1) * SEGMENT_RECORDS) continue;
      if (read.records.length < READ_PAGE) return;
    }
  }

  /**
   * A2: a record that does not decode is copied, intact, into the adapter's quarantine
   * (through a document of its own, `<thread>.-.record.<sequence>`, which `quarantineDocument`
   * moves aside), a `q` record in the log says so, and the typed error is thrown. Readers
   * skip the record from then on; nothing is deleted or reset.
   */
  private async quarantineDamaged(thread: ThreadLog): Promise<void> {
    const [entry] = thread.damaged;
    if (entry === undefined) return;
    const [sequence, { text, reason }] = entry;
    const location = await this.quarantineText(thread, sequence, text, reason);
    throw new CorruptCheckpointError(
      'log',
      `${thread.sessionId}/${LOG_RUN_ID}#${sequence}`,
      location,
      reason,
    );
  }

  /** Moves a record's text to the quarantine and marks it skipped; returns where it went. */
  async quarantineText(
    thread: ThreadLog,
    sequence: number,
    text: string,
    reason: string,
  ): Promise<string> {
    const id = `${encodeSegment(thread.threadId)}.-.record.${sequence}`;
    await this.adapter.putDocument(
      'checkpoints',
      id,
      { kind: 'full', revision: 1, text },
      { expectedRevision: null, durable: true },
    );
    const location = await this.adapter.quarantineDocument(
      'checkpoints',
      id,
      `log ${thread.sessionId}/${LOG_RUN_ID} record ${sequence}: ${reason}`,
    );
    await this.append(thread, { k: 'q', sequence, location });
    thread.damaged.delete(sequence);
    return location;
  }

  /** The text of one stored record (for quarantining a record whose value is damaged). */
  async recordText(thread: ThreadLog, position: number): Promise<string> {
    const segment = Math.floor((position - 1) / SEGMENT_RECORDS);
    const sequence = position - segment * SEGMENT_RECORDS;
    const read = await this.adapter.readLog(thread.sessionId, segmentRunId(segment), {
      afterSequence: sequence - 1,
      limit: 1,
    });
    return read.records[0]?.sequence === sequence ? read.records[0].text : '';
  }

  async delete(threadId: string): Promise<void> {
    const thread = this.thread(threadId);
    await this.locked(thread, async () => {
      // Every journal of the thread's log session: all its segments.
      await this.adapter.deleteLogs(thread.sessionId, { durable: this.durable });
    });
    this.threads.delete(threadId);
  }

  private locked<T>(thread: ThreadLog, work: () => Promise<T>): Promise<T> {
    const result = thread.lock.then(work);
    thread.lock = result.then(
      () => undefined,
      () => undefined,
    );
    return result;
  }
}
