import { isNotFound, toBackendError } from './errors.js';
import { type FileHandle, type FileSystem, readAt } from './file-system.js';
import { decodeFrames, FRAME_HEADER_BYTES } from './framing.js';

/**
 * How much of a group-commit log one read takes. A log is preallocated with zeros, so most
 * of a young log is zeros: a scan reads from where it stopped last time to the first frame
 * that is not valid, a chunk at a time, never the whole file.
 */
const SCAN_CHUNK_BYTES = 64 * 1024;

/**
 * Calls `visit` with each frame's payload of the log at `path` from byte `from` (a frame
 * boundary) up to `until` (a frame boundary, or the end), stopping at the end of its valid
 * frames: the zeros it was preallocated with, or a frame still being written. Resolves with
 * where it stopped, where the next scan goes on, or null when the log is gone (retired: its
 * journals were written and flushed before it was removed).
 */
export async function scanLog(
  fileSystem: FileSystem,
  path: string,
  from: number,
  visit: (payload: Uint8Array) => void,
  until = Number.POSITIVE_INFINITY,
): Promise<number | null> {
  let handle: FileHandle;
  try {
    handle = await fileSystem.open(path, 'r');
  } catch (error) {
    if (isNotFound(error)) return null;
    throw toBackendError(error, `open group-commit log ${path}`);
  }
  try {
    const end = Math.min((await handle.stat()).size, until);
    let offset = from;
    let want = SCAN_CHUNK_BYTES;
    while (offset < end) {
      const asked = Math.min(want, end - offset);
      const bytes = await readAt(handle, asked, offset);
      const decoded = decodeFrames(bytes);
      for (const payload of decoded.payloads) visit(payload);
      offset += decoded.validLength;
      if (!decoded.torn) {
        if (bytes.length < asked) break;
        want = SCAN_CHUNK_BYTES;
        continue;
      }
      // Stopped inside what was read: a frame the chunk's end cut (read it whole next time
      // round), or the end of the valid frames.
      const needed = frameBytesAt(bytes, decoded.validLength);
      const cutByChunk = needed === null || decoded.validLength + needed > bytes.length;
      if (!cutByChunk || bytes.length < asked) break;
      const frame = needed ?? FRAME_HEADER_BYTES;
      if (offset + frame > end) break;
      if (decoded.validLength === 0 && frame <= want) break;
      want = Math.max(SCAN_CHUNK_BYTES, frame);
    }
    return offset;
  } catch (error) {
    throw toBackendError(error, `read group-commit log ${path}`);
  } finally {
    await handle.close().catch(() => undefined);
  }
}

/** Bytes of the frame starting at `at`, by its length field; null when the field is cut. */
function frameBytesAt(bytes: Uint8Array, at: number): number | null {
  if (at + FRAME_HEADER_BYTES > bytes.length) return null;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return FRAME_HEADER_BYTES + view.getUint32(at, true);
}
