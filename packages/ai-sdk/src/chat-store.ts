import {
  AlreadyExistsError,
  InvalidInputError,
  type Message,
  type MessageInput,
  NotFoundError,
  type Session,
  type SessionStore,
} from '@keepsake/core';
import type { UIMessage } from 'ai';
import { chatEntriesOf, chatMessagesOf } from './chat-view.js';
import { sessionIdOfChat } from './ids.js';
import { jsonEqual } from './json-equal.js';
import { storedMessageOf } from './stored-message.js';

export interface LoadChatOptions {
  /**
   * Re-read the stored session, in case another server instance wrote it since this store
   * cached it (two instances on one backend). Loading is also what repairs a turn whose
   * server died (F1), once the store's `recovery.graceMs` has passed. @default true
   */
  refresh?: boolean;
}

/**
 * The chat's messages as the AI SDK's `UIMessage[]`, exactly as they were saved, or `[]`
 * for a chat never saved. While an answer streams, the list ends with the user's message
 * (the answer so far is in the stream that `resumeExistingStream` replays); an answer that
 * was stopped or cut by a crash ends with a `data-keepsake-marker` part.
 */
export async function loadChat<UI_MESSAGE extends UIMessage = UIMessage>(
  store: SessionStore,
  chatId: string,
  options: LoadChatOptions = {},
): Promise<UI_MESSAGE[]> {
  const session = await loadSession(store, chatId, options.refresh ?? true);
  return session === null ? [] : ((await chatMessagesOf(store, session)) as UI_MESSAGE[]);
}

export interface SaveChatOptions {
  /**
   * B5: allow the save to drop messages the stored chat has and `messages` does not (undo,
   * clear). Replacing a message (same id, new parts) needs no permission. @default false
   */
  allowShrink?: boolean;
  /** B3: resolve only once the chat is durable. @default true */
  fsync?: boolean;
}

/**
 * Makes the stored chat hold `messages`, creating it if needed. Messages that are stored
 * already and unchanged are kept as they are (an append writes only the new ones); a
 * message with a known id and new parts replaces the stored one. Dropping a stored message
 * is refused with `ShrinkRefusedError` unless `allowShrink` is set, so a stale client copy
 * never erases newer messages.
 *
 * An answer being streamed is saved by its run (E5), not here: while the chat has a pending
 * turn, its question and every assistant message the chat does not have yet (the answer as
 * the page or `toUIMessageStream`'s `onFinish` holds it, partial or finished, with or
 * without its id) are left out, and the rest is saved. So `saveChat` from an `onFinish`
 * neither stores the answer twice nor breaks the run.
 */
export async function saveChat(
  store: SessionStore,
  chatId: string,
  messages: readonly UIMessage[],
  options: SaveChatOptions = {},
): Promise<void> {
  const sessionId = sessionIdOfChat(chatId);
  if (!Array.isArray(messages)) {
    throw new InvalidInputError('saveChat() takes an array of UI messages', { path: 'messages' });
  }
  const fsync = options.fsync ?? true;
  const existing = await loadSession(store, chatId, true);
  if (existing === null) {
    const inputs = storedInputsOf(messages, messages.keys());
    try {
      await store.create({ id: sessionId, title: titleOf(messages), messages: inputs }, { fsync });
      return;
    } catch (error) {
      // Another request created it meanwhile: save over it like any stored chat.
      if (!AlreadyExistsError.isInstance(error)) throw error;
    }
  }
  const session = existing ?? (await store.load(sessionId, { refresh: true }));
  const entries = new Map(
    (await chatEntriesOf(store, session)).map((entry) => [entry.message.id, entry]),
  );
  // E5: the pending turn's question enters the transcript when its run ends, and its answer
  // is written by the run: neither is saved here.
  const pendingUserId = session.pending === null ? null : pendingUserIdOf(session);
  const isTheRuns = (message: unknown): boolean =>
    isObject(message) &&
    typeof message.id === 'string' &&
    (message.id === pendingUserId || (message.role === 'assistant' && !entries.has(message.id)));
  const savedIndexes = [...messages.keys()].filter(
    (index) => session.pending === null || !isTheRuns(messages[index]),
  );
  const inputs = storedInputsOf(messages, savedIndexes);
  const saved = savedIndexes.map((index) => messages[index] as UIMessage);
  const uiIds = new Set(saved.map((message) => message.id));
  const next: Message[] = [];
  const kept = new Set<Message>();
  saved.forEach((message, index) => {
    const entry = entries.get(message.id);
    if (entry !== undefined && jsonEqual(entry.message, message)) {
      for (const stored of entry.stored) {
        next.push(stored);
        kept.add(stored);
      }
      return;
    }
    next.push(inputs[index] as Message);
  });
  // Messages replaced by a new version of their UI message are not a shrink the caller
  // must allow; messages whose UI message is gone are.
  const dropped = [...entries.values()].filter(
    (entry) => !uiIds.has(entry.message.id) && entry.stored.some((stored) => !kept.has(stored)),
  );
  // A copy: it becomes the live session only if the save succeeds; a refused save (a
  // shrink, a conflict) leaves the live one as it was.
  await store.save(
    { ...session, messages: next },
    {
      fsync,
      allowShrink: options.allowShrink === true || dropped.length === 0,
    },
  );
}

/**
 * The Keepsake inputs of the messages at `indexes` (in order), checked before anything is
 * written: each a UI message, no id twice. Paths name the position in `messages`.
 */
function storedInputsOf(messages: readonly UIMessage[], indexes: Iterable<number>): MessageInput[] {
  const uiIds = new Set<string>();
  return [...indexes].map((index) => {
    const message = messages[index] as UIMessage;
    const input = storedMessageOf(message, `messages[${index}]`);
    if (uiIds.has(message.id)) {
      throw new InvalidInputError(`messages[${index}].id "${message.id}" is given twice`, {
        path: `messages[${index}].id`,
      });
    }
    uiIds.add(message.id);
    return input;
  });
}

function pendingUserIdOf(session: Session): unknown {
  return (session.pending?.userMessage as { aiSdk?: { id?: unknown } } | undefined)?.aiSdk?.id;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

async function loadSession(
  store: SessionStore,
  chatId: string,
  refresh: boolean,
): Promise<Session | null> {
  const sessionId = sessionIdOfChat(chatId);
  try {
    return await store.load(sessionId, { refresh });
  } catch (error) {
    if (NotFoundError.isInstance(error)) return null;
    throw error;
  }
}

/** A session title for listings (`keepsake ls`): the start of the first user text. */
export function titleOf(messages: readonly UIMessage[]): string {
  for (const message of messages) {
    if (message.role !== 'user') continue;
    for (const part of message.parts) {
      if (part.type === 'text' && part.text.trim().length > 0) {
        const text = part.text.trim().replace(/\s+/g, ' ');
        return text.length > 80 ? `${text.slice(0, 79)}…` : text;
      }
    }
  }
  return '';
}
