import { crc32c } from '@node-rs/crc32';

/** A streamed event as `run.append` gets it. */
export interface TokenEvent {
  readonly type: 'token';
  readonly data: { readonly text: string };
}

/** One JSON text of the event and its sequence number (a journal must be checked gap-free). */
function recordJson(event: TokenEvent, sequence: number): string {
  return JSON.stringify({ sequence, type: event.type, data: event.data });
}

/**
 * The event as a JSON line: the least any durable log of JavaScript objects does per event,
 * where the raw group-commit loop writes bytes prepared before the clock starts.
 */
export function jsonLine(event: TokenEvent, sequence: number): Buffer {
  return Buffer.from(`${recordJson(event, sequence)}\n`);
}

/**
 * The event framed as the contract asks of a journal record (E2): `[u32 length][u32 CRC32C
 * of the payload][payload]`, so a torn tail is detected. Nothing else: no ids, timestamps,
 * per-run files or locks.
 */
export function framedJson(event: TokenEvent, sequence: number): Buffer {
  const json = recordJson(event, sequence);
  const length = Buffer.byteLength(json, 'utf8');
  const frame = Buffer.allocUnsafe(8 + length);
  frame.writeUInt32LE(length, 0);
  frame.write(json, 8, length, 'utf8');
  frame.writeUInt32LE(crc32c(frame.subarray(8)) >>> 0, 4);
  return frame;
}
