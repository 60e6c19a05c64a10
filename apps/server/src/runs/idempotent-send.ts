import { createHash } from 'node:crypto';
import type { SessionStore } from '@keepsake/core';
import { ClientRequestError } from '../http/client-errors.js';

/**
 * Who a send is, when the client said: the user message's id and the run's id, derived from
 * its `Idempotency-Key` (or taken from its own message id), so a retry of the same send
 * names the same message and run. Core refuses a second message with an id the session
 * has (E1), so the same send can never become two turns, on any instance.
 */
export interface SendIdentity {
  readonly messageId: string;
  readonly runId: string;
  /** How the client named the send, for error messages. */
  readonly namedBy: 'Idempotency-Key' | 'message id';
}

/** A retried send already stored: the run it started, or the same key with another message. */
export type PreviousSend =
  | { readonly kind: 'same'; readonly runId: string }
  | { readonly kind: 'different' };

/** A1-safe digest: 32 characters of base64url. */
function digest(...parts: string[]): string {
  return createHash('sha256').update(parts.join('\n')).digest('base64url').slice(0, 32);
}

/** The identity of a send, or null when the client gave neither a key nor a message id. */
export function sendIdentity(
  sessionId: string,
  idempotencyKey: string | undefined,
  messageId: string | undefined,
): SendIdentity | null {
  if (idempotencyKey !== undefined && messageId !== undefined) {
    throw new ClientRequestError(
      400,
      'invalid_input',
      'Send either an Idempotency-Key header or a message `id`, not both: each names the send on its own.',
    );
  }
  if (idempotencyKey !== undefined) {
    const hash = digest(sessionId, 'idempotency-key', idempotencyKey);
    return { messageId: `u_${hash}`, runId: `r_${hash}`, namedBy: 'Idempotency-Key' };
  }
  if (messageId !== undefined) {
    return {
      messageId,
      runId: `r_${digest(sessionId, 'message-id', messageId)}`,
      namedBy: 'message id',
    };
  }
  return null;
}

/**
 * Whether the session already holds this send's user message: as its pending turn (the run
 * is still going) or in its transcript (the run ended, whichever way). The stored text
 * decides whether the retry is the same message.
 */
export async function findPreviousSend(
  store: SessionStore,
  sessionId: string,
  identity: SendIdentity,
  content: string,
): Promise<PreviousSend | null> {
  const session = await store.load(sessionId, { refresh: true });
  const pending = session.pending;
  const stored =
    pending !== null && pending.userMessage.id === identity.messageId
      ? { content: pending.userMessage.content, runId: pending.streamId }
      : session.messages
          .filter((message) => message.id === identity.messageId)
          .map((message) => ({ content: message.content, runId: message.runId ?? identity.runId }))
          .at(0);
  if (stored === undefined) return null;
  return stored.content === content ? { kind: 'same', runId: stored.runId } : { kind: 'different' };
}

/** 409: the key (or message id) of an earlier send, with another message. */
export class IdempotencyKeyReusedError extends ClientRequestError {
  constructor(identity: SendIdentity) {
    super(
      409,
      'idempotency_key_reused',
      `This ${identity.namedBy} was used for another message in this session. A retry must send the same content; a new message needs a new ${identity.namedBy}.`,
    );
    this.name = 'IdempotencyKeyReusedError';
  }
}
