import type { LogRecordInput } from '@keepsake/core';
import { decodeFrames } from './framing.js';
import { decodeJournalBatch } from './records.js';

/**
 * One append's records, durable (or written) somewhere other than its journal file so far:
 * in this process's memory waiting for the applier (unapplied-frames.ts), or in a
 * group-commit log of another process (other-process-logs.ts). `nonce` names the journal
 * incarnation it continues.
 */
export interface PendingBatch {
  readonly nonce: string;
  readonly records: readonly LogRecordInput[];
}

/** The batches in journal frames (as a journal file or a log entry holds them). */
export function batchesInFrames(nonce: string, frames: Uint8Array): PendingBatch[] {
  const batches: PendingBatch[] = [];
  for (const payload of decodeFrames(frames).payloads) {
    const records = decodeJournalBatch(payload);
    if (records !== null && records.length > 0) batches.push({ nonce, records });
  }
  return batches;
}

/**
 * The records of `batches` that continue a journal file holding up to `lastSequence` of
 * incarnation `nonce`, in order, as far as they chain without a gap. Batches of another
 * incarnation, and batches the file already holds, are left out; of two batches starting at
 * one sequence the later one counts (a retry after a failed log write reuses numbers, as
 * replay treats it: log-replay.ts).
 */
export function continuingRecords(
  batches: readonly PendingBatch[],
  nonce: string | null,
  lastSequence: number,
): LogRecordInput[] {
  if (nonce === null || batches.length === 0) return [];
  const byFirst = new Map<number, readonly LogRecordInput[]>();
  for (const batch of batches) {
    if (batch.nonce === nonce)
      byFirst.set((batch.records[0] as LogRecordInput).sequence, batch.records);
  }
  const continuing: LogRecordInput[] = [];
  let last = lastSequence;
  for (let next = byFirst.get(last + 1); next !== undefined; next = byFirst.get(last + 1)) {
    const end = (next.at(-1) as LogRecordInput).sequence;
    // Records run consecutively (checked on append); anything else ends the chain.
    if (end < last + 1) break;
    continuing.push(...next);
    last = end;
  }
  return continuing;
}
