import { createHash } from 'node:crypto';
import type { SessionSummary } from '@keepsake/core';

/**
 * User metadata of a session document holding the summary of its last indexed save (B7):
 * the index entry rides on the document's own PUT, so an indexed save is one request.
 */
export const SUMMARY_METADATA = 'keepsake-summary';

/** Set ('1') when the summary in metadata has a shortened title (see `encodeSummary`). */
export const SUMMARY_PARTIAL_METADATA = 'keepsake-summary-partial';

/**
 * The longest encoded summary carried in metadata. S3 allows 2 KB of user metadata per
 * object (names and values); the revision, write token and partial flag take under 150
 * bytes.
 */
export const SUMMARY_METADATA_LIMIT = 1_800;

/** What a document version carries of its last indexed summary. */
export interface CarriedMetadata {
  /** base64url of the summary's JSON (headers carry ASCII only). */
  readonly encoded: string;
  /**
   * The title was shortened to fit: the whole summary is an index entry the save writes
   * right after the document (a second PUT), and a listing that finds the document before
   * that entry shows the shortened title rather than leave the session out.
   */
  readonly partial: boolean;
}

function encode(summary: SessionSummary): string {
  return Buffer.from(JSON.stringify(summary), 'utf8').toString('base64url');
}

/** The summary as metadata: whole when it fits, else with the longest title prefix that does. */
export function encodeSummary(summary: SessionSummary): CarriedMetadata {
  const whole = encode(summary);
  if (whole.length <= SUMMARY_METADATA_LIMIT) return { encoded: whole, partial: false };
  const characters = Array.from(summary.title);
  const withTitle = (count: number) =>
    encode({ ...summary, title: characters.slice(0, count).join('') });
  let low = 0;
  let high = characters.length;
  while (low < high) {
    const middle = Math.ceil((low + high) / 2);
    if (withTitle(middle).length <= SUMMARY_METADATA_LIMIT) low = middle;
    else high = middle - 1;
  }
  return { encoded: withTitle(low), partial: true };
}

/** The metadata entries of a carried summary (none for undefined). */
export function summaryMetadata(carried: CarriedMetadata | undefined): Record<string, string> {
  if (carried === undefined) return {};
  return carried.partial
    ? { [SUMMARY_METADATA]: carried.encoded, [SUMMARY_PARTIAL_METADATA]: '1' }
    : { [SUMMARY_METADATA]: carried.encoded };
}

/** What a stored version's metadata carries, as `summaryMetadata` wrote it. */
export function carriedMetadataOf(
  metadata: Readonly<Record<string, string>>,
): CarriedMetadata | undefined {
  const encoded = metadata[SUMMARY_METADATA];
  if (encoded === undefined) return undefined;
  return { encoded, partial: metadata[SUMMARY_PARTIAL_METADATA] === '1' };
}

/**
 * The summary carried by a document's metadata (its JSON text, core validates it like any
 * entry, and its updatedAt for the entry's key), or null when there is none (a document
 * created with `skipIndex`, written out of band, or whose summary was too long) or it
 * cannot be read.
 */
export function carriedSummary(
  metadata: Readonly<Record<string, string>>,
): { readonly text: string; readonly updatedAt: number; readonly partial: boolean } | null {
  const encoded = metadata[SUMMARY_METADATA];
  if (encoded === undefined || !/^[A-Za-z0-9_-]+$/.test(encoded)) return null;
  const text = Buffer.from(encoded, 'base64url').toString('utf8');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return null;
  }
  const updatedAt = (parsed as { updatedAt?: unknown } | null)?.updatedAt;
  if (typeof updatedAt !== 'number' || !Number.isSafeInteger(updatedAt) || updatedAt < 0) {
    return null;
  }
  return { text, updatedAt, partial: metadata[SUMMARY_PARTIAL_METADATA] === '1' };
}

/**
 * An ETag as a key segment: what S3 returns for a PUT is quoted hex (`"<md5>"`, or
 * `"<md5>-<parts>"`); any other shape is hashed so the key stays within `[A-Za-z0-9_-]`.
 */
export function etagKeyPart(etag: string): string {
  const bare = etag.replace(/^"(.*)"$/, '$1');
  if (/^[A-Za-z0-9-]{1,64}$/.test(bare)) return bare;
  return createHash('sha256').update(bare).digest('base64url');
}
