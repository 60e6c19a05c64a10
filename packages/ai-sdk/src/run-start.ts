import {
  AlreadyExistsError,
  InvalidInputError,
  NotFoundError,
  RevisionConflictError,
  type RunHandle,
  type Session,
  type SessionStore,
} from '@keepsake/core';
import type { UIMessage } from 'ai';
import { titleOf } from './chat-store.js';
import { chatMessagesOf } from './chat-view.js';
import { storedFieldsOf, storedMessageOf } from './stored-message.js';

export type RunStart =
  | { kind: 'started'; handle: RunHandle; runId: string; messages: UIMessage[] }
  /** The message is the one the chat's live answer is for (a retried request). */
  | { kind: 'resumed'; handle: null; runId: string };

const CONFLICT_ATTEMPTS = 4;

/**
 * E1: stores the user's message as the chat's pending turn, creating the chat on its first
 * message. Returns the run and the chat as the model should see it (ending with the
 * message). A message already in the chat is answered again only for
 * `regenerate-message`, after dropping what followed it (B5).
 */
export async function startRun(
  store: SessionStore,
  sessionId: string,
  message: UIMessage,
  trigger: 'submit-message' | 'regenerate-message' | undefined,
): Promise<RunStart> {
  const userMessage = storedMessageOf(message, 'message');
  if (message.role !== 'user') {
    throw new InvalidInputError(
      'message.role must be "user": an answer starts from a user message',
      {
        path: 'message.role',
      },
    );
  }
  if (trigger !== undefined && trigger !== 'submit-message' && trigger !== 'regenerate-message') {
    throw new InvalidInputError('trigger must be "submit-message" or "regenerate-message"', {
      path: 'trigger',
    });
  }
  for (let attempt = 1; ; attempt++) {
    const session = await sessionFor(store, sessionId, message);
    const pending = session.pending;
    if (pending !== null && storedFieldsOf(pending.userMessage)?.id === message.id) {
      return { kind: 'resumed', handle: null, runId: pending.streamId };
    }
    try {
      if (pending === null) await dropForRegenerate(store, session, message, trigger);
      // SessionBusyError (E7) when another answer streams: the caller answers 409.
      const handle = await store.beginRun(sessionId, { userMessage });
      const messages = await chatMessagesOf(store, await store.load(sessionId));
      return { kind: 'started', handle, runId: handle.runId, messages };
    } catch (error) {
      // Another instance wrote the chat since it was read: read it again.
      if (!RevisionConflictError.isInstance(error) || attempt >= CONFLICT_ATTEMPTS) throw error;
    }
  }
}

async function sessionFor(
  store: SessionStore,
  sessionId: string,
  message: UIMessage,
): Promise<Session> {
  try {
    return await store.load(sessionId, { refresh: true });
  } catch (error) {
    if (!NotFoundError.isInstance(error)) throw error;
  }
  try {
    return await store.create({ id: sessionId, title: titleOf([message]) }, { fsync: true });
  } catch (error) {
    if (!AlreadyExistsError.isInstance(error)) throw error;
    return store.load(sessionId, { refresh: true });
  }
}

async function dropForRegenerate(
  store: SessionStore,
  session: Session,
  message: UIMessage,
  trigger: 'submit-message' | 'regenerate-message' | undefined,
): Promise<void> {
  const index = session.messages.findIndex((stored) => storedFieldsOf(stored)?.id === message.id);
  if (index < 0) return;
  if (trigger !== 'regenerate-message') {
    throw new InvalidInputError(
      `message "${message.id}" is in the chat already; send it with trigger "regenerate-message" to answer it again`,
      { path: 'message.id' },
    );
  }
  // A copy: the live session changes only if the save succeeds.
  await store.save(
    { ...session, messages: session.messages.slice(0, index) },
    { fsync: true, allowShrink: true },
  );
}
