import { randomId } from './ids.js';
import type { Message } from './schemas.js';
import type { MessageInput } from './session-types.js';
import { normalizeMessage } from './session-validation.js';

/**
 * Builds a valid message from what a caller knows (`role`, `content`, anything else),
 * filling `id` and `createdAt`: `session.messages.push(createMessage({ role: 'user', content }))`.
 * Throws InvalidInputError (or ReservedFieldError) for input the store would refuse.
 */
export function createMessage(input: MessageInput, now: number = Date.now()): Message {
  return normalizeMessage({ id: randomId(), createdAt: now, ...input }, now, 'createMessage()');
}
