import { randomBytes } from 'node:crypto';

/** User metadata of every object the adapter writes (`x-amz-meta-…`). */
export const REVISION_METADATA = 'keepsake-revision';
export const WRITE_METADATA = 'keepsake-write';
export const LAST_SEQUENCE_METADATA = 'keepsake-last-sequence';

/**
 * A token no other write of any process uses, stored with the object it wrote: when an
 * attempt's reply is lost (a timeout, a reset, a 5xx) and a HEAD or a resent conditional PUT
 * then finds the object changed, the token tells whether the change is this write's own.
 */
export function writeTokens(): () => string {
  const instance = randomBytes(9).toString('base64url');
  let counter = 0;
  return () => `${instance}.${(counter++).toString(36)}`;
}

/** The revision stored with a document; 0 for an object written without it (out of band). */
export function revisionOf(metadata: Readonly<Record<string, string>>): number {
  const text = metadata[REVISION_METADATA];
  const revision = text === undefined ? Number.NaN : Number(text);
  return Number.isSafeInteger(revision) && revision >= 0 ? revision : 0;
}
