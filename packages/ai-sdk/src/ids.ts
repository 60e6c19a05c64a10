import { createHash } from 'node:crypto';
import { ID_PATTERN, InvalidIdError } from '@keepsake/core';

/**
 * Chat and message ids of the AI SDK are any strings (`generateId()` makes 16 alphanumeric
 * characters, but applications use UUIDs, `chat:42`, paths…); Keepsake ids must be A1-safe
 * (`[A-Za-z0-9_-]{1,128}`) because they become file names and keys. An id that is already
 * safe is used as it is, which keeps stored sessions readable by every other Keepsake tool;
 * any other id is encoded. The mapping is injective: a plain id never starts with `__`, an
 * encoded one always does (`__e` + base64url of its UTF-8, `__h` + a SHA-256 for message ids
 * too long to encode), so two different ids never share a session or a message.
 */
const ENCODED_PREFIX = '__';
const MAX_ID_LENGTH = 128;

/** The Keepsake session id of an AI SDK chat id; `InvalidIdError` for an id it cannot store. */
export function sessionIdOfChat(chatId: unknown): string {
  const text = assertIdText(chatId, 'chat');
  if (isPlain(text)) return text;
  const encoded = `${ENCODED_PREFIX}e${Buffer.from(text, 'utf8').toString('base64url')}`;
  if (encoded.length > MAX_ID_LENGTH) {
    // Not hashed: a chat id must come back from its session id (listing chats).
    throw new InvalidIdError(
      'chat',
      chatId,
      'is too long: an id outside [A-Za-z0-9_-] is stored encoded and may be at most 93 UTF-8 bytes (an id of only those characters may have 128)',
    );
  }
  return encoded;
}

/** The chat id a session id stands for (the inverse of `sessionIdOfChat`). */
export function chatIdOfSession(sessionId: string): string {
  if (sessionId.startsWith(`${ENCODED_PREFIX}e`)) {
    return Buffer.from(sessionId.slice(ENCODED_PREFIX.length + 1), 'base64url').toString('utf8');
  }
  return sessionId;
}

/**
 * The Keepsake message id of a UI message id. Unlike a chat id it need not be decoded (the
 * stored message keeps the original id), so an id too long to encode is hashed instead.
 */
export function storedMessageIdOf(messageId: unknown): string {
  const text = assertIdText(messageId, 'message');
  if (isPlain(text)) return text;
  const encoded = `${ENCODED_PREFIX}e${Buffer.from(text, 'utf8').toString('base64url')}`;
  if (encoded.length <= MAX_ID_LENGTH) return encoded;
  return `${ENCODED_PREFIX}h${createHash('sha256').update(text, 'utf8').digest('base64url')}`;
}

function isPlain(id: string): boolean {
  return ID_PATTERN.test(id) && !id.startsWith(ENCODED_PREFIX);
}

function assertIdText(value: unknown, kind: 'chat' | 'message'): string {
  if (typeof value !== 'string') throw new InvalidIdError(kind, value, 'must be a string');
  if (value.length === 0) throw new InvalidIdError(kind, value, 'must not be empty');
  // A lone surrogate has no UTF-8 form: two such ids would encode alike.
  if (!(value as string & { isWellFormed(): boolean }).isWellFormed()) {
    throw new InvalidIdError(kind, value, 'must be well-formed Unicode (it has a lone surrogate)');
  }
  return value;
}

/**
 * The id an answer's UI message gets when its stream names none: deterministic per run, so
 * a replay of a run that died before its first chunk and the chat loaded later agree.
 */
export function answerMessageIdOf(runId: string): string {
  return `answer-${runId}`;
}
