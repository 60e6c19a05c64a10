import { createHash } from 'node:crypto';
import type { SessionSummary } from '@keepsake/core';

/**
 * User metadata of a session document holding the summary of its last indexed save (B7):
 * the index entry rides on the document's own PUT, so an indexed save is one request.
 */
export const SUMMARY_METADATA = 'keepsake-summary';

/**
 * The longest encoded summary carried in metadata. S3 allows 2 KB of user metadata per
 * object (names and values); the revision and write token take under 100 bytes. A longer
 * summary (a title of several hundred non-ASCII characters) is written as its own index
 * entry after the document, a second PUT.
 */
export const SUMMARY_METADATA_LIMIT = 1_800;

/** The summary as a metadata value (headers carry ASCII only: base64url of the JSON). */
export function encodeSummary(summary: SessionSummary): string | null {
  const encoded = Buffer.from(JSON.stringify(summary), 'utf8').toString('base64url');
  return encoded.length <= SUMMARY_METADATA_LIMIT ? encoded : null;
}

/**
 * The summary carried by a document's metadata (its JSON text, core validates it like any
 * entry, and its updatedAt for the entry's key), or null when there is none (a document
 * created with `skipIndex`, written out of band, or whose summary was too long) or it
 * cannot be read.
 */
export function carriedSummary(
  metadata: Readonly<Record<string, string>>,
): { readonly text: string; readonly updatedAt: number } | null {
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
  return { text, updatedAt };
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
