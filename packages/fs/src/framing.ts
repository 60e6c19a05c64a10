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
  const frame = new Uint8Array(FRAME_HEADER_BYTES + payload.length);
  const view = new DataView(frame.buffer);
  view.setUint32(0, payload.length, true);
  frame.set(payload, FRAME_HEADER_BYTES);
  view.setUint32(4, frameChecksum(frame.subarray(0, 4), payload), true);
  return frame;
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
  return crc32c(payload, crc32c(lengthBytes)) >>> 0;
}

/** CRC32C of a whole buffer (the base file header records it for its body). */
export function checksum(bytes: Uint8Array): number {
  return crc32c(bytes) >>> 0;
}
