import type { LogRecordInput } from '@keepsake/core';
import { FRAME_HEADER_BYTES, framed, framedAt } from './framing.js';

/**
 * Payloads carried inside frames (see framing.ts). The first byte says what a payload is,
 * so a file of one kind can never be read as another.
 *
 * - journal batch: one `appendLog` call, all its records in one frame, so an append is all
 *   or nothing for readers (E2): `[1][u32 count] ([f64 sequence][u32 bytes][utf-8 text])*`
 * - delta: one delta write to a document or the index, tied to its base by the base's
 *   nonce so deltas of a replaced base are never applied to the new one:
 *   `[2][8-byte nonce][f64 revision][utf-8 text]`
 * - journal header: the first frame of a journal file, naming this incarnation of the
 *   journal so the group-commit log never replays into a deleted and re-created one:
 *   `[3][8-byte nonce]`
 * - log entry: journal frames written to the group-commit log (group-commit-log.ts), with the journal
 *   they belong to: `[4][8-byte nonce][u16 bytes][session id][u16 bytes][run id][frames]`
 * - log header: the first frame of a group-commit log, its owner as JSON: `[5][utf-8 JSON]`
 */
const JOURNAL_BATCH = 1;
const DELTA = 2;
const JOURNAL_HEADER = 3;
const LOG_ENTRY = 4;
const LOG_HEADER = 5;
export const NONCE_BYTES = 8;

export function encodeJournalHeader(nonce: string): Uint8Array {
  const payload = Buffer.allocUnsafe(1 + NONCE_BYTES);
  payload.writeUInt8(JOURNAL_HEADER, 0);
  payload.write(nonce, 1, NONCE_BYTES, 'hex');
  return payload;
}

/** The nonce of a journal header payload, or null when the payload is not one. */
export function decodeJournalHeader(payload: Uint8Array): string | null {
  const buffer = asBuffer(payload);
  if (buffer.length !== 1 + NONCE_BYTES || buffer.readUInt8(0) !== JOURNAL_HEADER) return null;
  return buffer.toString('hex', 1);
}

export interface LogEntry {
  readonly nonce: string;
  readonly sessionId: string;
  readonly runId: string;
  /** Journal frames, exactly as written to the journal file. */
  readonly frames: Uint8Array;
}

/** A log entry, framed (framing.ts) in one allocation. */
export function encodeLogEntryFrame(entry: LogEntry): Uint8Array {
  const frames = entry.frames;
  return framedLogEntry(entry, frames.length, (frame, at) => frame.set(frames, at));
}

/** A framed log entry whose `framesBytes` of journal frames `fill` writes in place at `at`. */
function framedLogEntry(
  identity: Omit<LogEntry, 'frames'>,
  framesBytes: number,
  fill: (frame: Buffer, at: number) => void,
): Buffer {
  const { nonce, sessionId, runId } = identity;
  const sessionBytes = Buffer.byteLength(sessionId, 'utf8');
  const runBytes = Buffer.byteLength(runId, 'utf8');
  const size = 1 + NONCE_BYTES + 4 + sessionBytes + runBytes + framesBytes;
  return framed(size, (frame, at) => {
    let offset = frame.writeUInt8(LOG_ENTRY, at);
    offset += frame.write(nonce, offset, NONCE_BYTES, 'hex');
    offset = frame.writeUInt16LE(sessionBytes, offset);
    offset += frame.write(sessionId, offset, sessionBytes, 'utf8');
    offset = frame.writeUInt16LE(runBytes, offset);
    offset += frame.write(runId, offset, runBytes, 'utf8');
    fill(frame, offset);
  });
}

export function decodeLogEntry(payload: Uint8Array): LogEntry | null {
  const buffer = asBuffer(payload);
  if (buffer.length < 1 + NONCE_BYTES + 4 || buffer.readUInt8(0) !== LOG_ENTRY) return null;
  let offset = 1 + NONCE_BYTES;
  const sessionLength = buffer.readUInt16LE(offset);
  const sessionId = buffer.toString('utf8', offset + 2, offset + 2 + sessionLength);
  offset += 2 + sessionLength;
  if (offset + 2 > buffer.length) return null;
  const runLength = buffer.readUInt16LE(offset);
  const runId = buffer.toString('utf8', offset + 2, offset + 2 + runLength);
  offset += 2 + runLength;
  if (offset > buffer.length) return null;
  return {
    nonce: buffer.toString('hex', 1, 1 + NONCE_BYTES),
    sessionId,
    runId,
    frames: buffer.subarray(offset),
  };
}

export function encodeLogHeader(owner: object): Uint8Array {
  const json = Buffer.from(JSON.stringify(owner), 'utf8');
  const payload = Buffer.allocUnsafe(1 + json.length);
  payload.writeUInt8(LOG_HEADER, 0);
  json.copy(payload, 1);
  return payload;
}

export function decodeLogHeader(payload: Uint8Array): unknown {
  const buffer = asBuffer(payload);
  if (buffer.length < 2 || buffer.readUInt8(0) !== LOG_HEADER) return null;
  try {
    return JSON.parse(buffer.toString('utf8', 1));
  } catch {
    return null;
  }
}

/** One `appendLog` call's records as a journal batch, framed (framing.ts) in one allocation. */
export function encodeJournalBatchFrame(records: readonly LogRecordInput[]): Uint8Array {
  const lengths = textLengths(records);
  return framed(journalBatchBytes(lengths), (frame, at) =>
    writeJournalBatch(frame, at, records, lengths),
  );
}

/**
 * A log entry (see encodeLogEntryFrame) whose journal frames are one journal batch of
 * `records`, framed twice in one allocation: the streamed event's path, which would
 * otherwise frame the batch, then copy it into a second frame. `journalFrame` is the
 * journal batch frame inside `logFrame`, exactly as encodeJournalBatchFrame makes it.
 */
export function encodeLogEntryWithBatch(
  identity: Omit<LogEntry, 'frames'>,
  records: readonly LogRecordInput[],
): { logFrame: Uint8Array; journalFrame: Uint8Array } {
  const lengths = textLengths(records);
  const batchBytes = journalBatchBytes(lengths);
  let journalFrame: Uint8Array | null = null;
  const logFrame = framedLogEntry(identity, FRAME_HEADER_BYTES + batchBytes, (frame, at) => {
    journalFrame = framedAt(frame, at, batchBytes, (inner, payloadAt) =>
      writeJournalBatch(inner, payloadAt, records, lengths),
    );
  });
  return { logFrame, journalFrame: journalFrame as unknown as Uint8Array };
}

function textLengths(records: readonly LogRecordInput[]): number[] {
  const lengths: number[] = [];
  for (const record of records) lengths.push(Buffer.byteLength(record.text, 'utf8'));
  return lengths;
}

function journalBatchBytes(lengths: readonly number[]): number {
  let size = 5;
  for (const length of lengths) size += 12 + length;
  return size;
}

function writeJournalBatch(
  frame: Buffer,
  at: number,
  records: readonly LogRecordInput[],
  lengths: readonly number[],
): void {
  frame.writeUInt8(JOURNAL_BATCH, at);
  frame.writeUInt32LE(records.length, at + 1);
  let offset = at + 5;
  for (let index = 0; index < records.length; index++) {
    const record = records[index] as LogRecordInput;
    const length = lengths[index] as number;
    frame.writeDoubleLE(record.sequence, offset);
    frame.writeUInt32LE(length, offset + 8);
    frame.write(record.text, offset + 12, length, 'utf8');
    offset += 12 + length;
  }
}

/** The records of a batch payload, or null when the payload is not a journal batch. */
export function decodeJournalBatch(payload: Uint8Array): LogRecordInput[] | null {
  const buffer = asBuffer(payload);
  if (buffer.length < 5 || buffer.readUInt8(0) !== JOURNAL_BATCH) return null;
  const count = buffer.readUInt32LE(1);
  const records: LogRecordInput[] = [];
  let offset = 5;
  for (let index = 0; index < count; index++) {
    if (offset + 12 > buffer.length) return null;
    const sequence = buffer.readDoubleLE(offset);
    const length = buffer.readUInt32LE(offset + 8);
    const end = offset + 12 + length;
    if (end > buffer.length) return null;
    records.push({ sequence, text: buffer.toString('utf8', offset + 12, end) });
    offset = end;
  }
  return offset === buffer.length ? records : null;
}

export interface Delta {
  readonly nonce: string;
  readonly revision: number;
  readonly text: string;
}

export function encodeDelta(nonce: string, revision: number, text: string): Uint8Array {
  const body = Buffer.from(text, 'utf8');
  const payload = Buffer.allocUnsafe(1 + NONCE_BYTES + 8 + body.length);
  payload.writeUInt8(DELTA, 0);
  payload.write(nonce, 1, NONCE_BYTES, 'hex');
  payload.writeDoubleLE(revision, 1 + NONCE_BYTES);
  body.copy(payload, 1 + NONCE_BYTES + 8);
  return payload;
}

export function decodeDelta(payload: Uint8Array): Delta | null {
  const buffer = asBuffer(payload);
  const headerBytes = 1 + NONCE_BYTES + 8;
  if (buffer.length < headerBytes || buffer.readUInt8(0) !== DELTA) return null;
  return {
    nonce: buffer.toString('hex', 1, 1 + NONCE_BYTES),
    revision: buffer.readDoubleLE(1 + NONCE_BYTES),
    text: buffer.toString('utf8', headerBytes),
  };
}

function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
}
