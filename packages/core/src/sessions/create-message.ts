import { randomId } from '../validation/ids.js';
import type { Message } from '../validation/schemas.js';
import { normalizeMessage } from '../validation/session-validation.js';
import type { MessageInput } from './session-types.js';

/**
 * Builds a valid message from what a caller knows (`role`, `content`, anything else),
 * filling `id` and `createdAt`: `session.messages.push(createMessage({ role: 'user', content }))`.
 * Throws InvalidInputError (or ReservedFieldError) for input the store would refuse.
 */
export function createMessage(input: MessageInput, now: number = Date.now()): Message {
  return normalizeMessage({ id: randomId(), createdAt: now, ...input }, now, 'createMessage()');
}
