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
  frame.writeUInt32LE(payloadLength, 0);
  fill(frame, FRAME_HEADER_BYTES);
  const payload = frame.subarray(FRAME_HEADER_BYTES);
  frame.writeUInt32LE(frameChecksum(frame.subarray(0, 4), payload), 4);
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
