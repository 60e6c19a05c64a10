import type { LogRecordInput } from '@keepsake/core';
import { decodeFrames, FRAME_HEADER_BYTES } from './framing.js';
import { decodeJournalBatch, decodeJournalHeader } from './records.js';

/**
 * A journal file: an optional header frame (the journal's nonce), then one frame per
 * append batch. Parsing stops at the first frame that is torn or is not a batch.
 */
export interface JournalBatch {
  readonly first: number;
  readonly last: number;
  readonly records: LogRecordInput[];
}

export interface ParsedJournal {
  /** The nonce of this incarnation of the journal; null for a file without a header yet. */
  readonly nonce: string | null;
  readonly batches: JournalBatch[];
  readonly lastSequence: number;
  /** Bytes up to the end of the last valid frame. */
  readonly validLength: number;
  /** Bytes follow the last valid frame (E3). */
  readonly torn: boolean;
}

export function parseJournal(bytes: Uint8Array): ParsedJournal {
  const frames = decodeFrames(bytes);
  let nonce: string | null = null;
  const batches: JournalBatch[] = [];
  let validLength = 0;
  for (const [index, payload] of frames.payloads.entries()) {
    const header = index === 0 ? decodeJournalHeader(payload) : null;
    if (header !== null) {
      nonce = header;
    } else {
      const records = decodeJournalBatch(payload);
      if (records === null || records.length === 0) break;
      const first = (records[0] as LogRecordInput).sequence;
      batches.push({ first, last: (records.at(-1) as LogRecordInput).sequence, records });
    }
    validLength += FRAME_HEADER_BYTES + payload.length;
  }
  return {
    nonce,
    batches,
    lastSequence: batches.at(-1)?.last ?? 0,
    validLength,
    torn: validLength < bytes.length,
  };
}
