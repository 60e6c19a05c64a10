import {
  type AppendLogResult,
  BackendError,
  type LogDurability,
  type LogReadResult,
  type LogRecordInput,
  WriteOutcomeUnknownError,
} from '@keepsake/core';
import { backoffDelay, sleep } from './backoff.js';
import { ADAPTER_NAME, classify, toKeepsakeError } from './errors.js';
import { inBatches } from './in-batches.js';
import { RunJournal } from './journal-run.js';
import type { ListedObject } from './requests.js';
import { decodeSegment, encodeSegment } from './segment-format.js';
import type { StorageContext } from './storage-context.js';
import { LAST_SEQUENCE_METADATA, WRITE_METADATA } from './write-tokens.js';

/** Segment GETs a read makes at once. */
const READS_AT_ONCE = 8;
/** Runs whose state is kept once idle; the oldest idle one is forgotten first. */
const MAX_IDLE_RUNS = 10_000;
/**
 * Segments sit right under their run's folder: listed with the delimiter `/`, a nested
 * prefix's keys below it (H1) come back as one common prefix and are never walked.
 */
const RUN_FOLDER = { delimiter: '/' } as const;

export interface JournalOptions {
  readonly batchWindowMs: number;
  readonly maxBatchBytes: number;
}

interface Segment {
  readonly first: number;
  readonly key: string;
}

/**
 * Run journals (E2, E3) as segment objects, `journal/<sessionId>/<runId>/<firstSequence>`,
 * each holding a batch of consecutive records and created with `PUT If-None-Match: *`.
 *
 * Appending at sequence n creates the key of n. Every writer appends right after the last
 * segment it has seen, so two writers racing for n race for one key: one creates it, the
 * other gets 412, learns the journal's last sequence and reports it (`ok: false`), as the
 * contract asks. A resent or duplicated segment can never overwrite another, and keys sort
 * by sequence, so retries neither duplicate nor reorder events. An attempt whose reply was
 * lost stays "in doubt" and is sent again, byte for byte, before anything else of that run;
 * the write token in its metadata tells a landed earlier attempt from another writer.
 *
 * One PUT per append (per batch window with `batchWindowMs`, see the options). Learning the
 * last sequence (once per run and adapter, and after a conflict) costs ⌈segments/1000⌉ LISTs
 * and one HEAD. A read from a sequence costs one LIST (more for a long journal, or one from
 * the start when the sequence falls inside a segment) and one GET per segment it returns.
 */
export class JournalStore {
  private readonly runs = new Map<string, RunJournal>();
  /** Set by `stopTimers()` (close): no batch timer is armed again. */
  private stopped = false;

  private readonly context: StorageContext;
  private readonly options: JournalOptions;

  constructor(context: StorageContext, options: JournalOptions) {
    this.context = context;
    this.options = options;
  }

  append(
    sessionId: string,
    runId: string,
    records: readonly LogRecordInput[],
    durability: LogDurability,
  ): Promise<AppendLogResult> {
    const run = this.run(sessionId, runId);
    return run.serialize(async () => {
      if (records.length === 0) return { ok: true };
      await this.settleDoubt(run);
      if (run.stored === null) await this.learnLastSequence(run);
      if (records[0]!.sequence !== run.lastSequence + 1 && run.waiting.length === 0) {
        // What this adapter knew may be stale (another writer appended, or deleted).
        await this.learnLastSequence(run);
      }
      if (records[0]!.sequence !== run.lastSequence + 1) {
        return { ok: false, lastSequence: run.lastSequence };
      }
      for (const record of records) {
        run.waiting.push(record);
        run.waitingBytes += record.text.length;
      }
      const { batchWindowMs, maxBatchBytes } = this.options;
      if (durability === 'none' && batchWindowMs > 0 && run.waitingBytes < maxBatchBytes) {
        this.scheduleFlush(run, batchWindowMs);
        return { ok: true };
      }
      return this.writeWaiting(run);
    });
  }

  /** Reads records after `afterSequence`, in order; this adapter's waiting batch is written first. */
  async read(
    sessionId: string,
    runId: string,
    options: { afterSequence: number; limit: number },
  ): Promise<LogReadResult> {
    const run = this.runs.get(this.runKey(sessionId, runId));
    if (run?.hasUnwritten === true) await run.serialize(() => this.flushRun(run));
    const { segments, exists, complete } = await this.segmentsFrom(
      sessionId,
      runId,
      options.afterSequence,
      options.limit,
    );
    if (!exists) return { exists: false, records: [], tornTail: false };
    const records: LogRecordInput[] = [];
    let tornTail = false;
    let last = options.afterSequence;
    for (let start = 0; start < segments.length && records.length < options.limit; ) {
      const batch = segments.slice(start, start + READS_AT_ONCE);
      start += batch.length;
      const reads = await inBatches(batch, READS_AT_ONCE, (segment) =>
        this.context.requests.get(segment.key, 'read a journal'),
      );
      for (const [index, read] of reads.entries()) {
        const segment = batch[index]!;
        // Deleted since the LIST: the journal is being removed (B8).
        if (read === null) continue;
        const decoded = decodeSegment(read.body, segment.first);
        if (!decoded.ok) {
          // E3: a damaged segment is skipped; at the end of the journal it is a torn tail.
          tornTail = complete && segment === segments.at(-1);
          continue;
        }
        for (const record of decoded.records) {
          if (record.sequence <= last || records.length >= options.limit) continue;
          records.push(record);
          last = record.sequence;
        }
      }
    }
    return { exists: true, records, tornTail };
  }

  /**
   * Run ids with a journal under this session (and runs whose batch waits in this adapter).
   * A run is listed when a segment key of its own shape is: every key under the session's
   * folder is listed and parsed (⌈segments/1000⌉ LISTs, as the delete costs). A listing by
   * the delimiter `/` would also give the folders of a nested prefix
   * (`<prefix>/journal/<sessionId>/doc/`…) as runs (H1).
   */
  async list(sessionId: string): Promise<string[]> {
    const runIds = new Set<string>();
    for (const segment of await this.sessionSegments(sessionId, 'list journals')) {
      runIds.add(segment.runId);
    }
    for (const run of this.runs.values()) {
      if (run.sessionId === sessionId && run.hasUnwritten) runIds.add(run.runId);
    }
    return [...runIds];
  }

  /**
   * B8: removes every journal of the session: its segment keys, nothing else. A key under
   * `journal/<sessionId>/` of any other shape may be a nested prefix's (H1, issue 35).
   */
  async deleteAll(sessionId: string): Promise<void> {
    for (const run of this.runs.values()) {
      if (run.sessionId === sessionId) await run.serialize(async () => run.reset());
    }
    const segments = await this.sessionSegments(sessionId, 'delete journals');
    await this.context.requests.deleteMany(
      segments.map((segment) => segment.key),
      'delete journals',
    );
  }

  async delete(sessionId: string, runId: string): Promise<void> {
    const run = this.runs.get(this.runKey(sessionId, runId));
    if (run !== undefined) await run.serialize(async () => run.reset());
    const { requests, keys } = this.context;
    const prefix = keys.journal(sessionId, runId);
    const segments = this.segments(
      prefix,
      await requests.listAll(prefix, 'delete a journal', RUN_FOLDER),
    );
    await requests.deleteMany(
      segments.map((segment) => segment.key),
      'delete a journal',
    );
  }

  /** Every segment key of the session's journals, with its run. */
  private async sessionSegments(
    sessionId: string,
    operation: string,
  ): Promise<Array<{ key: string; runId: string }>> {
    const { requests, keys } = this.context;
    const objects = await requests.listAll(keys.sessionJournals(sessionId), operation);
    return objects.flatMap((object) => {
      const parsed = keys.parseSegmentKey(sessionId, object.key);
      return parsed === null ? [] : [{ key: object.key, runId: parsed.runId }];
    });
  }

  /** C1: writes every batch still waiting; rejects with the first failure. */
  async flushAll(): Promise<void> {
    const pending = [...this.runs.values()].filter((run) => run.hasUnwritten);
    const outcomes = await Promise.allSettled(
      pending.map((run) => run.serialize(() => this.flushRun(run))),
    );
    const failed = outcomes.find((outcome) => outcome.status === 'rejected');
    if (failed !== undefined) throw (failed as PromiseRejectedResult).reason;
  }

  /** Stops every batch timer for good (close). */
  stopTimers(): void {
    this.stopped = true;
    for (const run of this.runs.values()) {
      if (run.timer !== null) clearTimeout(run.timer);
      run.timer = null;
    }
  }

  private runKey(sessionId: string, runId: string): string {
    return `${sessionId}/${runId}`;
  }

  private run(sessionId: string, runId: string): RunJournal {
    const key = this.runKey(sessionId, runId);
    let run = this.runs.get(key);
    if (run === undefined) {
      run = new RunJournal(sessionId, runId);
      this.runs.set(key, run);
      if (this.runs.size > MAX_IDLE_RUNS) this.forgetAnIdleRun();
    }
    return run;
  }

  private forgetAnIdleRun(): void {
    for (const [key, run] of this.runs) {
      if (!run.hasUnwritten) {
        this.runs.delete(key);
        return;
      }
    }
  }

  private scheduleFlush(run: RunJournal, delayMs: number): void {
    if (run.timer !== null || this.stopped) return;
    run.timer = setTimeout(() => {
      run.timer = null;
      run
        .serialize(() => this.flushRun(run))
        .catch(() => {
          // The batch stays waiting (or in doubt): the next append, read, sync or close
          // writes it, and a later timer tries again meanwhile.
          this.scheduleFlush(run, Math.max(delayMs, 1000));
        });
    }, delayMs);
    run.timer.unref();
  }

  /** Writes what is in doubt, then what is waiting. */
  private async flushRun(run: RunJournal): Promise<void> {
    await this.settleDoubt(run);
    if (run.waiting.length > 0) {
      const result = await this.writeWaiting(run);
      if (!result.ok) {
        throw new BackendError(
          ADAPTER_NAME,
          `write a journal batch of run ${run.runId}: another writer took sequence ${result.lastSequence}`,
        );
      }
    }
  }

  /** A segment in doubt is sent again before anything else; a conflict drops it. */
  private async settleDoubt(run: RunJournal): Promise<void> {
    if (run.inDoubt === null) return;
    await this.sendInDoubt(run);
  }

  /** Moves the waiting records into one segment and sends it. */
  private writeWaiting(run: RunJournal): Promise<AppendLogResult> {
    if (run.timer !== null) clearTimeout(run.timer);
    run.timer = null;
    const records = run.waiting;
    run.waiting = [];
    run.waitingBytes = 0;
    const token = this.context.nextWriteToken();
    const last = records.at(-1)!.sequence;
    run.inDoubt = {
      key: this.context.keys.segment(run.sessionId, run.runId, records[0]!.sequence),
      body: encodeSegment(records),
      metadata: { [LAST_SEQUENCE_METADATA]: String(last), [WRITE_METADATA]: token },
      token,
      last,
    };
    return this.sendInDoubt(run);
  }

  private async sendInDoubt(run: RunJournal): Promise<AppendLogResult> {
    const segment = run.inDoubt!;
    const { requests, keys } = this.context;
    const operation = 'append to a journal';
    // B8: a journal deleted by another instance since this adapter last looked must not be
    // started again by a late append. Its last segment is HEADed beside the PUT (no extra
    // round trip); when it is gone, the new segment is removed again and the append refused.
    const previous =
      run.lastSegment === null || run.storedJustLearned
        ? null
        : requests.head(keys.segment(run.sessionId, run.runId, run.lastSegment), operation).then(
            (found) => found !== null,
            // Unknown: the append stands; core's own checks still apply.
            () => true,
          );
    run.storedJustLearned = false;
    for (let attempt = 0; ; ) {
      let created: boolean;
      try {
        created = (
          await requests.putOnce(segment.key, segment.body, segment.metadata, {
            ifNoneMatch: true,
          })
        ).ok;
      } catch (error) {
        const failure = classify(error);
        if (failure.kind !== 'transient') {
          // Refused as a whole (access denied, a bad request): nothing was stored.
          run.inDoubt = null;
          run.stored = null;
          throw toKeepsakeError(error, operation);
        }
        attempt++;
        if (attempt >= requests.retry.attempts) {
          if (!failure.sent) {
            run.inDoubt = null;
            throw toKeepsakeError(error, operation);
          }
          // Kept in doubt: sent again, identical, before this run's next write.
          throw new WriteOutcomeUnknownError(ADAPTER_NAME, operation, { cause: error });
        }
        await sleep(backoffDelay(requests.retry, attempt - 1));
        continue;
      }
      if (!created) {
        let stored: Awaited<ReturnType<typeof requests.head>>;
        try {
          stored = await requests.head(segment.key, 'check whether a journal append landed');
        } catch (error) {
          throw new WriteOutcomeUnknownError(ADAPTER_NAME, operation, { cause: error });
        }
        if (stored === null || stored.metadata[WRITE_METADATA] !== segment.token) {
          // Another writer holds this sequence: nothing of this segment was stored.
          run.inDoubt = null;
          return { ok: false, lastSequence: await this.learnLastSequence(run) };
        }
      }
      run.inDoubt = null;
      if (previous !== null && !(await previous)) {
        await requests.delete(segment.key, 'remove a journal deleted meanwhile');
        return { ok: false, lastSequence: await this.learnLastSequence(run) };
      }
      run.stored = segment.last;
      run.lastSegment = this.context.keys.segmentFirstSequence(
        keys.journal(run.sessionId, run.runId),
        segment.key,
      );
      return { ok: true };
    }
  }

  /** Learns, and records in `run`, the last sequence stored (0 without a journal). */
  private async learnLastSequence(run: RunJournal): Promise<number> {
    const found = await this.lastStored(run);
    run.stored = found.sequence;
    run.lastSegment = found.segment;
    run.storedJustLearned = true;
    return found.sequence;
  }

  /** The last segment's `last-sequence` metadata (its header for one written without it). */
  private async lastStored(run: RunJournal): Promise<{ sequence: number; segment: number | null }> {
    const { requests, keys } = this.context;
    const prefix = keys.journal(run.sessionId, run.runId);
    const segments = this.segments(
      prefix,
      await requests.listAll(prefix, 'read a journal', RUN_FOLDER),
    );
    const last = segments.at(-1);
    if (last === undefined) return { sequence: 0, segment: null };
    const stored = await requests.head(last.key, 'read a journal');
    if (stored === null) return this.lastStored(run);
    const fromMetadata = Number(stored.metadata[LAST_SEQUENCE_METADATA]);
    if (Number.isSafeInteger(fromMetadata) && fromMetadata >= last.first) {
      return { sequence: fromMetadata, segment: last.first };
    }
    // Written without the metadata (out of band): the header says, else one record.
    const read = await requests.get(last.key, 'read a journal');
    const decoded = read === null ? null : decodeSegment(read.body, last.first);
    return { sequence: decoded?.ok === true ? decoded.last : last.first, segment: last.first };
  }

  private segments(prefix: string, objects: readonly ListedObject[]): Segment[] {
    return objects.flatMap((object) => {
      const first = this.context.keys.segmentFirstSequence(prefix, object.key);
      return first === null ? [] : [{ first, key: object.key }];
    });
  }

  /**
   * The segments that may hold records after `afterSequence`: those starting after it (one
   * LIST from there, more only for a long journal), plus the one it falls inside when no
   * segment starts right after it (a LIST from the start). `complete`: the last segment
   * listed is the journal's last.
   */
  private async segmentsFrom(
    sessionId: string,
    runId: string,
    afterSequence: number,
    limit: number,
  ): Promise<{ segments: Segment[]; exists: boolean; complete: boolean }> {
    const { requests, keys } = this.context;
    const prefix = keys.journal(sessionId, runId);
    const after: Segment[] = [];
    let token: string | null = null;
    do {
      const page: Awaited<ReturnType<typeof requests.list>> = await requests.list(
        prefix,
        {
          ...RUN_FOLDER,
          token,
          ...(token === null && afterSequence > 0
            ? { startAfter: keys.segmentsAfter(sessionId, runId, afterSequence) }
            : {}),
        },
        'read a journal',
      );
      after.push(...this.segments(prefix, page.objects));
      token = page.nextToken;
    } while (token !== null && after.length < limit);
    const complete = token === null;
    if (afterSequence === 0) return { segments: after, exists: after.length > 0, complete };
    if (after[0]?.first === afterSequence + 1) return { segments: after, exists: true, complete };
    // The record after `afterSequence` may sit inside an earlier segment: list from the start.
    const all = this.segments(prefix, await requests.listAll(prefix, 'read a journal', RUN_FOLDER));
    const before = all.filter((segment) => segment.first <= afterSequence).at(-1);
    return {
      segments: before === undefined ? after : [before, ...after],
      exists: all.length > 0,
      complete,
    };
  }
}
