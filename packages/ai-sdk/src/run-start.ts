import {
  AlreadyExistsError,
  InvalidInputError,
  type MessageInput,
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
 *
 * A regenerate claims the chat first (its run begins, E7) and drops the old question and
 * what followed it only then, inside its own turn: a run that cannot begin (another
 * instance's answer claimed the chat meanwhile, a backend error) has dropped nothing. Core
 * has no single write that begins a run and shortens the transcript, so the pending question
 * gets a fresh Keepsake id (beginRun refuses the id of a message still in the transcript;
 * its UI id, which is what the chat shows, is the same).
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
    const regenerate = pending === null && isInChat(session, message, trigger);
    let handle: RunHandle;
    try {
      // SessionBusyError (E7) when another answer streams: the caller answers 409.
      handle = await store.beginRun(sessionId, {
        userMessage: regenerate ? withoutId(userMessage) : userMessage,
      });
    } catch (error) {
      // Another instance wrote the chat since it was read: read it again.
      if (!RevisionConflictError.isInstance(error) || attempt >= CONFLICT_ATTEMPTS) throw error;
      continue;
    }
    try {
      if (regenerate) await dropForRegenerate(store, handle.sessionId, message.id);
      const messages = await chatMessagesOf(store, await store.load(sessionId));
      return { kind: 'started', handle, runId: handle.runId, messages };
    } catch (error) {
      // No producer will answer: end the run now rather than leave it to recovery (F1). A
      // failed run keeps its question (and a regenerate's old answer) under an error marker.
      await handle.fail({ message: START_FAILED_TEXT }).catch(() => {});
      throw error;
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

/** Whether the chat has the message already: refused unless it is a regenerate. */
function isInChat(
  session: Session,
  message: UIMessage,
  trigger: 'submit-message' | 'regenerate-message' | undefined,
): boolean {
  if (indexOfMessage(session, message.id) < 0) return false;
  if (trigger !== 'regenerate-message') {
    throw new InvalidInputError(
      `message "${message.id}" is in the chat already; send it with trigger "regenerate-message" to answer it again`,
      { path: 'message.id' },
    );
  }
  return true;
}

function indexOfMessage(session: Session, uiId: string): number {
  return session.messages.findIndex((stored) => storedFieldsOf(stored)?.id === uiId);
}

function withoutId(message: MessageInput): MessageInput {
  const { id: _storedId, ...rest } = message;
  return rest;
}

/**
 * B5: drops the old copy of the regenerated question and what followed it, inside the run
 * that answers it again (the chat is claimed: no other answer can start meanwhile). When the
 * drop cannot be written, the caller fails the run, which keeps everything: the old question
 * and its answer, then the question again under an error marker.
 */
async function dropForRegenerate(
  store: SessionStore,
  sessionId: string,
  uiId: string,
): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    // Refreshed after a conflict: another instance saved the chat (saveChat) meanwhile.
    const session = await store.load(sessionId, { refresh: attempt > 1 });
    const index = indexOfMessage(session, uiId);
    if (index < 0) return;
    try {
      // A copy: the live session changes only if the save succeeds.
      await store.save(
        { ...session, messages: session.messages.slice(0, index) },
        { fsync: true, allowShrink: true },
      );
      return;
    } catch (error) {
      if (!RevisionConflictError.isInstance(error) || attempt >= CONFLICT_ATTEMPTS) throw error;
    }
  }
}

/** The error marker's text when a run began but its answer could not be started. */
const START_FAILED_TEXT = 'The answer could not be started.';
