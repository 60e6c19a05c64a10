/**
 * How a document is stored: one Redis string holding its last full write and the deltas
 * appended since, each record followed by a fixed 64-byte trailer:
 *
 *   `~1` kind(B|D) revision(16 digits) byteLength(12 digits) writeToken(32, '.'-padded) `~`
 *
 * A full write is one SET (it replaces the deltas with it), a delta one APPEND, and the
 * stored revision is the last trailer, read with GETRANGE without reading the document.
 * Every write is therefore a single Redis write, which Redis 7.0 keeps atomic in its AOF
 * even across a crash (a multi-write script is logged as MULTI/EXEC, and 7.0 replays one
 * cut short by a crash wrongly: see the README).
 */
export const TRAILER_BYTES = 64;
export const TOKEN_WIDTH = 32;

export function revisionField(revision: number): string {
  if (!Number.isSafeInteger(revision) || revision < 0) {
    throw new RangeError(`revision ${revision} does not fit the stored format`);
  }
  return String(revision).padStart(16, '0');
}

export function tokenField(token: string): string {
  if (token.length > TOKEN_WIDTH) throw new RangeError('write token too long');
  return token.padEnd(TOKEN_WIDTH, '.');
}

/**
 * The bytes a write stores: the text, then its trailer. A string (its UTF-8 bytes are what
 * is stored): ioredis then writes the command as one string, instead of copying buffers
 * into a buffer of its own.
 */
export function encodeRecord(
  kind: 'full' | 'delta',
  revision: number,
  text: string,
  token: string,
): string {
  return encodeRecordFields(kind, revisionField(revision), text, tokenField(token));
}

/** `encodeRecord` from the revision and token already in their fields (a save has them). */
export function encodeRecordFields(
  kind: 'full' | 'delta',
  revisionText: string,
  text: string,
  tokenText: string,
): string {
  const length = String(Buffer.byteLength(text, 'utf8')).padStart(12, '0');
  return `${text}~1${kind === 'full' ? 'B' : 'D'}${revisionText}${length}${tokenText}~`;
}

export interface ParsedDocument {
  readonly revision: number;
  readonly base: string;
  readonly deltas: string[];
}

/**
 * Splits a stored value into base and deltas, from the end. Null when the bytes are not
 * in this format (then the caller hands them on as they are, for core to quarantine).
 */
export function parseDocument(value: Buffer): ParsedDocument | null {
  const records: string[] = [];
  let end = value.length;
  let revision: number | null = null;
  let sawBase = false;
  while (end > 0) {
    if (end < TRAILER_BYTES) return null;
    const trailer = value.toString('latin1', end - TRAILER_BYTES, end);
    if (!trailer.startsWith('~1') || !trailer.endsWith('~')) return null;
    const kind = trailer[2];
    const recordRevision = Number(trailer.slice(3, 19));
    const length = Number(trailer.slice(19, 31));
    const start = end - TRAILER_BYTES - length;
    if ((kind !== 'B' && kind !== 'D') || !Number.isSafeInteger(length) || start < 0) return null;
    revision ??= recordRevision;
    records.push(value.toString('utf8', start, end - TRAILER_BYTES));
    end = start;
    if (kind === 'B') {
      sawBase = true;
      break;
    }
  }
  if (!sawBase || end !== 0 || revision === null || !Number.isSafeInteger(revision)) return null;
  records.reverse();
  return { revision, base: records[0]!, deltas: records.slice(1) };
}
