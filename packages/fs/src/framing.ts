import { crc32c } from '@node-rs/crc32';

/**
 * E2/E3: records in append-only files are framed as
 *
 *   [u32 LE payload length][u32 LE CRC32C of (length bytes + payload)][payload]
 *
 * The checksum covers the length too, so a zero-filled tail (a file extended but never
 * written before a power loss) never reads as an empty record: CRC32C of four zero bytes is
 * not zero. A frame that is cut short or fails its checksum ends the valid part of the file;
 * everything from there on is the torn tail, ignored on read and cut off by the next append.
 */
export const FRAME_HEADER_BYTES = 8;
/** A frame longer than this is garbage, not a record (the store's limits are far lower). */
const MAX_FRAME_BYTES = 1024 * 1024 * 1024;

export function encodeFrame(payload: Uint8Array): Uint8Array {
  return framed(payload.length, (frame, at) => frame.set(payload, at));
}

/**
 * A frame whose payload `fill` writes in place at `at` (exactly `payloadLength` bytes): one
 * allocation and no copy of the payload, on the path of every streamed event.
 */
export function framed(payloadLength: number, fill: (frame: Buffer, at: number) => void): Buffer {
  const frame = Buffer.allocUnsafe(FRAME_HEADER_BYTES + payloadLength);
  framedAt(frame, 0, payloadLength, fill);
  return frame;
}

/**
 * Frames a payload in place inside `buffer`, the frame starting at `start` (a frame nested
 * in another one's payload); returns the frame, a view of `buffer`.
 */
export function framedAt(
  buffer: Buffer,
  start: number,
  payloadLength: number,
  fill: (frame: Buffer, at: number) => void,
): Buffer {
  const payloadStart = start + FRAME_HEADER_BYTES;
  const end = payloadStart + payloadLength;
  buffer.writeUInt32LE(payloadLength, start);
  fill(buffer, payloadStart);
  const checksum = frameChecksum(
    buffer.subarray(start, start + 4),
    buffer.subarray(payloadStart, end),
  );
  buffer.writeUInt32LE(checksum, start + 4);
  return buffer.subarray(start, end);
}

export interface DecodedFrames {
  readonly payloads: Uint8Array[];
  /** Bytes from the start of the file up to the end of the last valid frame. */
  readonly validLength: number;
  /** True when bytes follow the last valid frame (a torn or corrupt tail). */
  readonly torn: boolean;
}

export function decodeFrames(bytes: Uint8Array, start = 0): DecodedFrames {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const payloads: Uint8Array[] = [];
  let offset = start;
  while (offset + FRAME_HEADER_BYTES <= bytes.length) {
    const length = view.getUint32(offset, true);
    const stored = view.getUint32(offset + 4, true);
    const end = offset + FRAME_HEADER_BYTES + length;
    if (length > MAX_FRAME_BYTES || end > bytes.length) break;
    const payload = bytes.subarray(offset + FRAME_HEADER_BYTES, end);
    if (frameChecksum(bytes.subarray(offset, offset + 4), payload) !== stored) break;
    payloads.push(payload);
    offset = end;
  }
  return { payloads, validLength: offset, torn: offset < bytes.length };
}

function frameChecksum(lengthBytes: Uint8Array, payload: Uint8Array): number {
  return crc32c(payload, lengthChecksum(lengthBytes)) >>> 0;
}

/** CRC32C's table (reflected polynomial 0x82F63B78), for the four length bytes only. */
const CRC32C_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let byte = 0; byte < 256; byte++) {
    let crc = byte;
    for (let bit = 0; bit < 8; bit++) crc = crc & 1 ? (crc >>> 1) ^ 0x82f63b78 : crc >>> 1;
    table[byte] = crc >>> 0;
  }
  return table;
})();

/**
 * CRC32C of a frame's four length bytes, the same value as `crc32c(lengthBytes)`: computed
 * here because a native call costs more than the four table steps (two of these per
 * streamed event showed in profiles).
 */
export function lengthChecksum(lengthBytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (let index = 0; index < 4; index++) {
    crc = (CRC32C_TABLE[(crc ^ (lengthBytes[index] as number)) & 0xff] as number) ^ (crc >>> 8);
  }
  return (crc ^ 0xffffffff) >>> 0;
}

/** CRC32C of a whole buffer (the base file header records it for its body). */
export function checksum(bytes: Uint8Array): number {
  return crc32c(bytes) >>> 0;
}
