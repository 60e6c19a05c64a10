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
 * A regenerate drops the old question and what followed it in the very write that begins
 * its run (`beginRun({ replaceFrom })`, B5): a run that cannot begin has dropped nothing, and
 * a crash right after cannot leave the question twice. It drops only what the client saw
 * (B4): with `lastMessageId`, the chat's last message must still be that one; without it,
 * no later question may follow the regenerated one (another tab or instance asked it, and
 * this client never showed it). Otherwise `RevisionConflictError`, and nothing changes.
 */
export async function startRun(
  store: SessionStore,
  sessionId: string,
  message: UIMessage,
  trigger: 'submit-message' | 'regenerate-message' | undefined,
  lastMessageId?: string,
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
    const replaceFrom = regenerate ? regeneratedFrom(session, message.id, lastMessageId) : null;
    let handle: RunHandle;
    try {
      // SessionBusyError (E7) when another answer streams: the caller answers 409. A chat
      // written by another instance since it was read is a conflict: read it again (B4).
      handle = await store.beginRun(sessionId, {
        userMessage: regenerate ? withoutId(userMessage) : userMessage,
        ...(replaceFrom === null ? {} : { replaceFrom }),
      });
    } catch (error) {
      // Another instance wrote the chat since it was read: read it again.
      if (!RevisionConflictError.isInstance(error) || attempt >= CONFLICT_ATTEMPTS) throw error;
      continue;
    }
    try {
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
 * B4, B5: the stored id a regenerate answers again from, once the chat is as the client saw
 * it: its last message is `lastMessageId` when given, else no question follows the
 * regenerated one. Refused with RevisionConflictError otherwise (nothing is written).
 */
function regeneratedFrom(session: Session, uiId: string, lastMessageId?: string): string {
  const index = indexOfMessage(session, uiId);
  const later = session.messages.slice(index + 1);
  const last = session.messages.at(-1);
  const moved =
    lastMessageId === undefined
      ? later.some((stored) => stored.role === 'user')
      : (last === undefined ? undefined : storedFieldsOf(last)?.id) !== lastMessageId;
  if (moved) throw new RevisionConflictError(session.id, null, session.revision);
  return session.messages[index]!.id;
}

/** The error marker's text when a run began but its answer could not be started. */
const START_FAILED_TEXT = 'The answer could not be started.';
