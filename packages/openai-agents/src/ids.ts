import { ID_PATTERN, InvalidIdError } from '@keepsake/core';

/**
 * Session ids of the Agents SDK are any strings (`MemorySession` makes UUIDs, applications use
 * `user:42`, e-mail addresses…); Keepsake ids must be A1-safe (`[A-Za-z0-9_-]{1,128}`) because
 * they become file names and keys. An id that is already safe is used as it is, so the stored
 * session is readable by every other Keepsake tool under the same name; any other id is
 * encoded. The mapping is injective: a plain id never starts with `__`, an encoded one always
 * does (`__e` + base64url of its UTF-8), so two different ids never share a session.
 */
const ENCODED_PREFIX = '__';
const MAX_ID_LENGTH = 128;

/** The Keepsake session id of an Agents SDK session id; `InvalidIdError` for one it cannot store. */
export function keepsakeIdOf(sessionId: unknown): string {
  if (typeof sessionId !== 'string') {
    throw new InvalidIdError('session', sessionId, 'must be a string');
  }
  if (sessionId.length === 0) throw new InvalidIdError('session', sessionId, 'must not be empty');
  if (!(sessionId as string & { isWellFormed(): boolean }).isWellFormed()) {
    throw new InvalidIdError('session', sessionId, 'must be well-formed Unicode');
  }
  if (ID_PATTERN.test(sessionId) && !sessionId.startsWith(ENCODED_PREFIX)) return sessionId;
  const encoded = `${ENCODED_PREFIX}e${Buffer.from(sessionId, 'utf8').toString('base64url')}`;
  if (encoded.length > MAX_ID_LENGTH) {
    throw new InvalidIdError(
      'session',
      sessionId,
      'is too long: an id outside [A-Za-z0-9_-] is stored encoded and may be at most 93 UTF-8 bytes (an id of only those characters may have 128)',
    );
  }
  return encoded;
}

/** The Agents SDK session id a Keepsake session id stands for (the inverse of `keepsakeIdOf`). */
export function sessionIdOfKeepsake(keepsakeId: string): string {
  if (keepsakeId.startsWith(`${ENCODED_PREFIX}e`)) {
    return Buffer.from(keepsakeId.slice(ENCODED_PREFIX.length + 1), 'base64url').toString('utf8');
  }
  return keepsakeId;
}
