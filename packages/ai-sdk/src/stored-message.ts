import { InvalidInputError, type Message, type MessageInput } from '@keepsake/core';
import type { UIMessage } from 'ai';
import { storedMessageIdOf } from './ids.js';

/**
 * A UI message in a Keepsake session: the Keepsake message keeps the role, its `content`
 * is the UI message's `parts` array as it is (every part is an object with a string
 * `type`, which is what a Keepsake content part is, and unknown fields are kept, A4), and
 * the `aiSdk` field keeps what has no Keepsake field: the original id (Keepsake ids are
 * A1-safe, UI ids are any string) and the metadata. Nothing is converted, so the round trip
 * is lossless for every part type, including ones this package has never heard of.
 *
 * Keepsake tools that read text (the CLI, memory providers) read the `text` parts; the
 * other parts are opaque to them. Reasoning parts stay in the parts, where the AI SDK reads
 * them back (providers need them, with their metadata, to continue a conversation).
 */
export interface StoredUIFields {
  /** The UI message id (the Keepsake id is derived from it, see ids.ts). */
  id: string;
  /** `UIMessage.metadata`, when the message has one. */
  metadata?: unknown;
}

/** The Keepsake field that holds `StoredUIFields`; its presence marks a message this package wrote. */
export const STORED_UI_FIELD = 'aiSdk';

const roles: ReadonlySet<string> = new Set(['user', 'assistant', 'system']);

/** A UI message as a Keepsake message input; `InvalidInputError` (with `path`) when it is not one. */
export function storedMessageOf(message: UIMessage, where = 'message'): MessageInput {
  assertUIMessage(message, where);
  const fields: StoredUIFields = { id: message.id };
  if (message.metadata !== undefined) fields.metadata = message.metadata;
  return {
    id: storedMessageIdOf(message.id),
    role: message.role,
    content: message.parts as unknown as MessageInput['content'],
    [STORED_UI_FIELD]: fields,
  };
}

/** The UI message a stored message holds, or null when this package did not write it. */
export function uiMessageOfStored(message: Message): UIMessage | null {
  const fields = storedFieldsOf(message);
  if (fields === null || !Array.isArray(message.content)) return null;
  if (message.role === 'tool') return null;
  const uiMessage: UIMessage = {
    id: fields.id,
    role: message.role,
    parts: structuredClone(message.content) as unknown as UIMessage['parts'],
  };
  if (fields.metadata !== undefined) uiMessage.metadata = structuredClone(fields.metadata);
  return uiMessage;
}

export function storedFieldsOf(message: Message): StoredUIFields | null {
  const fields = (message as Record<string, unknown>)[STORED_UI_FIELD];
  if (typeof fields !== 'object' || fields === null) return null;
  const id = (fields as { id?: unknown }).id;
  return typeof id === 'string' ? (fields as StoredUIFields) : null;
}

/**
 * The shape every UI message has (`validateUIMessages` checks the parts in depth; this is
 * what storing needs): an object with a string id, a role, and an array of parts, each an
 * object with a string `type`. Bad input is refused before anything is written.
 */
export function assertUIMessage(message: unknown, where: string): asserts message is UIMessage {
  if (typeof message !== 'object' || message === null || Array.isArray(message)) {
    throw new InvalidInputError(`${where} must be a UI message object { id, role, parts }`, {
      path: where,
    });
  }
  const candidate = message as Record<string, unknown>;
  if (typeof candidate.id !== 'string' || candidate.id.length === 0) {
    throw new InvalidInputError(`${where}.id must be a non-empty string`, { path: `${where}.id` });
  }
  if (typeof candidate.role !== 'string' || !roles.has(candidate.role)) {
    throw new InvalidInputError(`${where}.role must be "user", "assistant" or "system"`, {
      path: `${where}.role`,
    });
  }
  if (!Array.isArray(candidate.parts)) {
    throw new InvalidInputError(`${where}.parts must be an array of message parts`, {
      path: `${where}.parts`,
    });
  }
  candidate.parts.forEach((part: unknown, index) => {
    const type = (part as { type?: unknown } | null)?.type;
    if (
      typeof part !== 'object' ||
      part === null ||
      Array.isArray(part) ||
      typeof type !== 'string'
    ) {
      throw new InvalidInputError(`${where}.parts[${index}] must be an object with a string type`, {
        path: `${where}.parts[${index}]`,
      });
    }
  });
}
