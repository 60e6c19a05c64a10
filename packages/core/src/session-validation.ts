import { findReservedField, headOf, isPlainObject } from './document-codec.js';
import { randomId } from './ids.js';
import { InvalidInputError, ReservedFieldError } from './input-errors.js';
import { type Message, messageSchema, type Session, sessionSchema } from './schemas.js';

const headSchema = sessionSchema.omit({ messages: true });

/** A4 and schema checks of what the caller wrote; nothing is written when they fail. */
export function assertWritable(session: Session): void {
  const reserved = findReservedField(session);
  if (reserved !== null) throw new ReservedFieldError(reserved, `session "${session.id}"`);
  const head = headSchema.safeParse(headOf(session));
  if (!head.success) {
    const issue = head.error.issues[0];
    throw new InvalidInputError(
      `Session "${session.id}" has an invalid field \`${issue?.path.join('.')}\`: ${issue?.message}`,
      { cause: head.error },
    );
  }
  if (session.pending !== null) {
    const field = findReservedField(session.pending.userMessage);
    if (field !== null) throw new ReservedFieldError(field, 'the pending user message');
  }
}

/** Fills ids and timestamps of new messages and validates them (stored ones were checked). */
export function normalizeMessages(session: Session, stored: readonly Message[], now: number): void {
  if (!Array.isArray(session.messages)) {
    throw new InvalidInputError(`Session "${session.id}" messages must be an array`);
  }
  const messages = session.messages;
  let firstChanged = 0;
  while (firstChanged < stored.length && messages[firstChanged] === stored[firstChanged]) {
    firstChanged++;
  }
  // Stored messages are frozen and were validated when written; check only the rest.
  const storedSet = firstChanged < stored.length ? new Set(stored) : null;
  for (let index = firstChanged; index < messages.length; index++) {
    const candidate = messages[index];
    if (storedSet?.has(candidate as Message)) continue;
    messages[index] = normalizeMessage(
      candidate,
      now,
      `session "${session.id}" messages[${index}]`,
    );
  }
}

/** Validates one caller-written message and fills `id` and `createdAt` when missing. */
export function normalizeMessage(candidate: unknown, now: number, where: string): Message {
  if (!isPlainObject(candidate)) throw new InvalidInputError(`${where} must be an object`);
  const reserved = findReservedField(candidate);
  if (reserved !== null) throw new ReservedFieldError(reserved, where);
  const filled =
    candidate.id === undefined || candidate.createdAt === undefined
      ? { ...candidate, id: candidate.id ?? randomId(), createdAt: candidate.createdAt ?? now }
      : candidate;
  const parsed = messageSchema.safeParse(filled);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new InvalidInputError(
      `${where} is invalid at \`${issue?.path.join('.')}\`: ${issue?.message}`,
      {
        cause: parsed.error,
      },
    );
  }
  return filled as Message;
}
