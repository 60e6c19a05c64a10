import type { LogRecordInput } from '@keepsake/core';

/**
 * The bytes of one journal segment object: a header line, then each record's text followed
 * by a newline. The header gives the sequence range and every record's length in bytes, so
 * a text may hold any character (a newline included) and a damaged object is recognised
 * as damaged instead of being read as fewer records.
 *
 * ```
 * {"keepsakeSegment":1,"first":7,"last":9,"bytes":[112,98,130]}
 * <record 7>
 * <record 8>
 * <record 9>
 * ```
 */
const FORMAT_VERSION = 1;

export function encodeSegment(records: readonly LogRecordInput[]): string {
  const first = records[0]!.sequence;
  const header = {
    keepsakeSegment: FORMAT_VERSION,
    first,
    last: records.at(-1)!.sequence,
    bytes: records.map((record) => Buffer.byteLength(record.text)),
  };
  let body = `${JSON.stringify(header)}\n`;
  for (const record of records) body += `${record.text}\n`;
  return body;
}

export type DecodedSegment =
  | { readonly ok: true; readonly last: number; readonly records: LogRecordInput[] }
  | { readonly ok: false; readonly reason: string };

/** Decodes a segment whose key says it starts at `first`; anything inconsistent is damage. */
export function decodeSegment(body: string, first: number): DecodedSegment {
  const newline = body.indexOf('\n');
  if (newline < 0) return { ok: false, reason: 'no header line' };
  let header: { keepsakeSegment?: unknown; first?: unknown; last?: unknown; bytes?: unknown };
  try {
    header = JSON.parse(body.slice(0, newline)) as typeof header;
  } catch {
    return { ok: false, reason: 'the header is not JSON' };
  }
  const { last, bytes } = header;
  if (
    header.keepsakeSegment !== FORMAT_VERSION ||
    header.first !== first ||
    typeof last !== 'number' ||
    !Number.isSafeInteger(last) ||
    !Array.isArray(bytes) ||
    bytes.length !== last - first + 1 ||
    !bytes.every((length) => Number.isSafeInteger(length) && length >= 0)
  ) {
    return { ok: false, reason: 'the header does not describe this segment' };
  }
  const content = Buffer.from(body.slice(newline + 1), 'utf8');
  const records: LogRecordInput[] = [];
  let offset = 0;
  for (const [index, length] of (bytes as number[]).entries()) {
    const end = offset + length;
    if (end + 1 > content.length || content[end] !== 0x0a) {
      return { ok: false, reason: `record ${first + index} is cut short` };
    }
    records.push({ sequence: first + index, text: content.toString('utf8', offset, end) });
    offset = end + 1;
  }
  if (offset !== content.length) return { ok: false, reason: 'bytes after the last record' };
  return { ok: true, last, records };
}
