import {
  type Collection,
  decodeStoredSession,
  encodeSessionDocument,
  type StoredDocument,
} from '@keepsake/core';

/**
 * A stored document as `migrateBackend` writes it to its target: a document stored in full
 * as its bytes; a session with deltas decoded (deltas folded in) and encoded in full with the
 * stored revision; the documents of every other collection (lifecycle state, run records,
 * checkpoints, checkpoint writes) as their text. Two stores hold the same document when
 * these texts are equal, whatever their deltas and layout. (The folding rule is core's: this module only calls core's codec,
 * the same way `migrateBackend` does.)
 */
export type CanonicalDocument =
  | { readonly ok: true; readonly revision: number; readonly text: string }
  | { readonly ok: false; readonly reason: string };

/**
 * The time a decode is told it is. Decoding fills a few absent or invalid fields with the
 * time of reading (A5: a message without `createdAt`, a reset pending start), so two decodes
 * of one such document at different times differ there: see `sameDocumentModuloReadTime`.
 */
const READ_TIME = 1;

export function canonicalDocument(
  collection: Collection,
  id: string,
  stored: StoredDocument,
  now = READ_TIME,
): CanonicalDocument {
  if (collection !== 'sessions' && collection !== 'revisions') {
    // Core moves these byte for byte and never writes deltas to them (see migrateBackend).
    if (stored.deltas.length > 0) return { ok: false, reason: 'holds deltas core never writes' };
    return { ok: true, revision: stored.revision, text: stored.base };
  }
  const sessionId = collection === 'sessions' ? id : id.slice(0, id.lastIndexOf('.'));
  const decoded = decodeStoredSession(sessionId, stored, now);
  if (!decoded.ok) return { ok: false, reason: decoded.reason };
  // A document stored in full moves byte for byte; only deltas are folded (core's rule).
  if (stored.deltas.length === 0) return { ok: true, revision: stored.revision, text: stored.base };
  return {
    ok: true,
    revision: stored.revision,
    text: encodeSessionDocument({ ...decoded.session, revision: stored.revision }),
  };
}

/**
 * Whether `copied` is what `original` becomes when copied at some time: equal to it, or, for
 * a document whose decode fills fields with the time of reading, equal everywhere except at
 * those fields, which hold one time of their own. The fields are found by decoding the
 * original at two different times and seeing where the results differ.
 */
export function sameDocument(
  collection: Collection,
  id: string,
  original: StoredDocument,
  copied: StoredDocument,
): boolean {
  const expected = canonicalDocument(collection, id, original);
  const actual = canonicalDocument(collection, id, copied);
  if (!expected.ok || !actual.ok) return false;
  if (expected.revision !== actual.revision) return false;
  if (expected.text === actual.text) return true;
  const later = canonicalDocument(collection, id, original, READ_TIME + 1);
  if (!later.ok || later.text === expected.text) return false;
  const state = { readTime: null as number | null };
  return equalModuloReadTime(
    JSON.parse(expected.text),
    JSON.parse(later.text),
    JSON.parse(actual.text),
    state,
  );
}

function equalModuloReadTime(
  early: unknown,
  late: unknown,
  actual: unknown,
  state: { readTime: number | null },
): boolean {
  if (early === READ_TIME && late === READ_TIME + 1) {
    // A field filled at reading: the copy holds the time of its own reading, one for all.
    if (typeof actual !== 'number') return false;
    state.readTime ??= actual;
    return state.readTime === actual;
  }
  if (typeof early !== 'object' || early === null) return early === actual;
  if (typeof actual !== 'object' || actual === null || typeof late !== 'object' || late === null) {
    return false;
  }
  if (Array.isArray(early) !== Array.isArray(actual)) return false;
  const earlyKeys = Object.keys(early);
  const actualKeys = Object.keys(actual);
  if (earlyKeys.length !== actualKeys.length) return false;
  return earlyKeys.every(
    (key, index) =>
      actualKeys[index] === key &&
      equalModuloReadTime(
        (early as Record<string, unknown>)[key],
        (late as Record<string, unknown>)[key],
        (actual as Record<string, unknown>)[key],
        state,
      ),
  );
}
