import { randomBytes } from 'node:crypto';
import { isNotFound, toBackendError } from './errors.js';
import { type FileSystem, readAt } from './file-system.js';
import { checksum } from './framing.js';
import { readOptional } from './optional-file.js';
import { NONCE_BYTES } from './records.js';

/**
 * The JSON header line a base starts with (see SegmentedFiles): its nonce is what the deltas
 * of this base carry, and `bytes` and `crc32c` tell a whole base from a damaged one.
 */
export interface BaseHeader {
  readonly format: 'keepsake-base';
  readonly revision: number;
  readonly nonce: string;
  readonly bytes: number;
  readonly crc32c: number;
  /** Extra numbers a user of the base keeps in its header (the index keeps its entry count). */
  readonly [extra: string]: unknown;
}

export type BaseRead =
  | { readonly status: 'missing' }
  /** The base exists but its header or checksum is wrong; `raw` is its text, as is. */
  | { readonly status: 'corrupt'; readonly raw: string; readonly revision: number }
  | { readonly status: 'ok'; readonly header: BaseHeader; readonly text: string };

const HEADER_PROBE_BYTES = 4096;

/** A new base holding `text`: its header, its fresh nonce and the bytes to write. */
export function encodeBase(
  revision: number,
  text: string,
  extra: Record<string, number>,
): { header: BaseHeader; nonce: string; bytes: Buffer } {
  const body = Buffer.from(text, 'utf8');
  const nonce = randomBytes(NONCE_BYTES).toString('hex');
  const header: BaseHeader = {
    format: 'keepsake-base',
    revision,
    nonce,
    bytes: body.length,
    crc32c: checksum(body),
    ...extra,
  };
  const bytes = Buffer.concat([Buffer.from(`${JSON.stringify(header)}\n`, 'utf8'), body]);
  return { header, nonce, bytes };
}

export async function readBase(fileSystem: FileSystem, path: string): Promise<BaseRead> {
  const bytes = await readOptional(fileSystem, path);
  if (bytes === null) return { status: 'missing' };
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
  const newline = buffer.indexOf(10);
  const header = newline < 0 ? null : parseHeader(buffer.toString('utf8', 0, newline));
  const body = buffer.subarray(newline + 1);
  if (header === null || header.bytes !== body.length || header.crc32c !== checksum(body)) {
    return { status: 'corrupt', raw: buffer.toString('utf8'), revision: header?.revision ?? 0 };
  }
  return { status: 'ok', header, text: body.toString('utf8') };
}

/** The header of a base without reading its text (null: no base). */
export async function probeBaseHeader(
  fileSystem: FileSystem,
  path: string,
): Promise<{ status: 'ok'; header: BaseHeader } | { status: 'corrupt'; revision: number } | null> {
  let handle: Awaited<ReturnType<FileSystem['open']>>;
  try {
    handle = await fileSystem.open(path, 'r');
  } catch (error) {
    if (isNotFound(error)) return null;
    throw toBackendError(error, `open ${path}`);
  }
  try {
    const bytes = Buffer.from(await readAt(handle, HEADER_PROBE_BYTES, 0));
    const newline = bytes.indexOf(10);
    const header = newline < 0 ? null : parseHeader(bytes.toString('utf8', 0, newline));
    return header ? { status: 'ok', header } : { status: 'corrupt', revision: 0 };
  } catch (error) {
    throw toBackendError(error, `read ${path}`);
  } finally {
    await handle.close().catch(() => undefined);
  }
}

function parseHeader(line: string): BaseHeader | null {
  try {
    const header = JSON.parse(line) as Partial<BaseHeader>;
    if (
      header.format === 'keepsake-base' &&
      typeof header.revision === 'number' &&
      typeof header.nonce === 'string' &&
      /^[0-9a-f]{16}$/.test(header.nonce) &&
      typeof header.bytes === 'number' &&
      typeof header.crc32c === 'number'
    ) {
      return header as BaseHeader;
    }
  } catch {
    // Not a header: the caller reports the base as corrupt.
  }
  return null;
}
