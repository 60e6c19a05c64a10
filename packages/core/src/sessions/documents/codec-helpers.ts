import type { StoredDocument } from '../../adapter/adapter.js';
import { InvalidInputError } from '../../errors/input-errors.js';
import { assertValidId } from '../../validation/ids.js';
import { findUnstorableField, MAX_SESSION_DEPTH } from '../../validation/json-value.js';
import type { Session } from '../../validation/schemas.js';
import {
  assertNotSummaryView,
  type DecodeResult,
  decodeSession,
  encodeFull,
} from './document-codec.js';

/**
 * The codec as exported (`encodeSessionDocument`, `decodeStoredSession`), for tools that
 * read or write stored documents themselves: the CLI, an adapter's listing, a migration.
 * Their arguments come from anywhere, so they are checked first and refused with a typed
 * error naming the argument (issue 35), where the store's own paths, which pass values
 * checked already, call the codec directly.
 */

/**
 * A stored session's text (a full document). It serializes what it is given, schema and all
 * (a test plants a document with a bad field through it, A5), but not what JSON would not
 * store as it is: something other than an object, or a value A4 refuses (a cycle, a bigint,
 * a symbol key, nesting past the limit…) is InvalidInputError naming its path, and a summary
 * view SummaryOnlyError, instead of a TypeError or a RangeError from JSON.stringify.
 */
export function encodeSessionDocument(session: Session): string {
  if (typeof session !== 'object' || session === null || Array.isArray(session)) {
    throw new InvalidInputError('encodeSessionDocument() takes a session object', { path: '' });
  }
  // Before the walk, which would refuse the view's marker (a symbol key) as data.
  assertNotSummaryView(session);
  const unstorable = findUnstorableField(session, { depth: 1, maxDepth: MAX_SESSION_DEPTH });
  if (unstorable !== null) {
    const at = unstorable.path === '' ? '' : ` \`${unstorable.path}\``;
    throw new InvalidInputError(`encodeSessionDocument():${at} ${unstorable.reason}`, {
      cause: unstorable.cause,
      path: unstorable.path,
    });
  }
  return encodeFull(session);
}

/**
 * A stored document decoded and validated (A2, A5), as the store reads it. Bad arguments (an
 * expected id that is not one, a stored document that is not `{ revision, base, deltas }` of
 * texts, a `now` that is not a time) are refused with a typed error; any stored text gets a
 * result, `ok: false` with the reason when it does not parse.
 */
export function decodeStoredSession(
  expectedId: string,
  stored: StoredDocument,
  now: number,
): DecodeResult {
  assertValidId(expectedId);
  const document = storedDocumentOf(stored);
  if (typeof now !== 'number' || !Number.isFinite(now) || now < 0) {
    throw new InvalidInputError(
      'decodeStoredSession(): `now` must be a time in milliseconds since the epoch (Date.now())',
      { path: 'now' },
    );
  }
  return decodeSession(expectedId, document, now);
}

/** The fields of `stored`, read once and checked (a getter is not read twice). */
function storedDocumentOf(stored: unknown): StoredDocument {
  const refuse = (path: string, what: string, cause?: unknown) =>
    new InvalidInputError(`decodeStoredSession(): ${what}`, { path, cause });
  if (typeof stored !== 'object' || stored === null) {
    throw refuse('', 'the stored document must be an object { revision, base, deltas }');
  }
  let revision: unknown;
  let base: unknown;
  let deltas: unknown;
  try {
    ({ revision, base, deltas } = stored as Record<string, unknown>);
  } catch (cause) {
    throw refuse('', 'the stored document could not be read', cause);
  }
  if (typeof base !== 'string') throw refuse('base', '`base` must be the stored text');
  if (!Array.isArray(deltas)) throw refuse('deltas', '`deltas` must be a list of texts');
  const notText = deltas.findIndex((delta) => typeof delta !== 'string');
  if (notText !== -1) throw refuse(`deltas[${notText}]`, `\`deltas[${notText}]\` is not text`);
  if (!Number.isSafeInteger(revision) || (revision as number) < 0) {
    throw refuse('revision', '`revision` must be a non-negative integer');
  }
  return { revision: revision as number, base, deltas: [...(deltas as string[])] };
}
