import { isDeepStrictEqual } from 'node:util';
import type { Message, Session } from '../validation/schemas.js';
import type { CreateSessionInput } from './session-types.js';

/**
 * B4: whether `stored` is the document this very create would write. Asked only for an id
 * whose earlier create from the same store failed after it was sent: a retry of a create
 * whose first outcome was unknown (`WriteOutcomeUnknownError`: it may have landed) meets
 * its own document and returns it, while a different document under the id is still
 * refused (`AlreadyExistsError`). Compared: every field the caller gave and every field a
 * new session starts with (its first revision, no pending turn, no tool calls), and each message
 * field the caller gave. What the store chose itself (the times, generated message ids and
 * times) may differ between the two attempts, so those are not compared.
 */
export function isSameCreation(
  stored: Session,
  built: Session,
  input: CreateSessionInput,
): boolean {
  // A create writes the first revision; anything later was written on top of it.
  if (stored.revision > 1 || stored.pending !== null || stored.toolCalls.length > 0) {
    return false;
  }
  const chosen = new Set(['createdAt', 'updatedAt', 'revision', 'messages']);
  const keys = new Set([...Object.keys(stored), ...Object.keys(built)]);
  for (const key of keys) {
    if (chosen.has(key)) continue;
    if (!isDeepStrictEqual(fieldOf(stored, key), fieldOf(built, key))) return false;
  }
  const given = input.messages ?? [];
  if (stored.messages.length !== built.messages.length) return false;
  return stored.messages.every((message, index) =>
    sameMessage(message, built.messages[index]!, given[index] as Partial<Message> | undefined),
  );
}

function sameMessage(
  stored: Message,
  built: Message,
  given: Partial<Message> | undefined,
): boolean {
  const keys = new Set([...Object.keys(stored), ...Object.keys(built)]);
  for (const key of keys) {
    // Chosen by the store when the caller did not give them.
    if ((key === 'id' || key === 'createdAt') && given?.[key] === undefined) continue;
    if (!isDeepStrictEqual(fieldOf(stored, key), fieldOf(built, key))) return false;
  }
  return true;
}

function fieldOf(object: object, key: string): unknown {
  return (object as Record<string, unknown>)[key];
}
