import {
  InvalidInputError,
  type Message,
  type Session,
  SessionBusyError,
  type SessionStore,
} from '@keepsake/core';

export interface TurnEdit {
  session: Session;
  /** The user message of the turn that was removed. */
  removedUserMessage: Message;
}

/**
 * B5 undo: removes the last user turn and everything after it (answers, markers, tool
 * calls) with an explicit `allowShrink`. The store keeps the revision before the shrink, and
 * no recovery ever rolls the shrink back.
 */
export function removeLastTurn(store: SessionStore, sessionId: string): Promise<TurnEdit> {
  // Under the session's lock, so no checkpoint or run in this process sees a half-made edit.
  return store.withLock(sessionId, () => removeLastTurnLocked(store, sessionId));
}

async function removeLastTurnLocked(store: SessionStore, sessionId: string): Promise<TurnEdit> {
  const session = await store.load(sessionId, { refresh: true });
  if (session.pending !== null) throw new SessionBusyError(sessionId, session.pending.streamId);
  const start = session.messages.findLastIndex((message) => message.role === 'user');
  if (start < 0) {
    throw new InvalidInputError(`Session "${sessionId}" has no user turn to undo or retry`);
  }
  const removed = session.messages.slice(start);
  const removedIds = new Set(removed.map((message) => message.id));
  const removedRuns = new Set(removed.flatMap((message) => (message.runId ? [message.runId] : [])));
  const before = { messages: session.messages, toolCalls: session.toolCalls };
  session.messages = session.messages.slice(0, start);
  session.toolCalls = session.toolCalls.filter(
    (call) =>
      !(call.messageId !== undefined && removedIds.has(call.messageId)) &&
      !(call.runId !== undefined && removedRuns.has(call.runId)),
  );
  try {
    const saved = await store.save(session, { allowShrink: true, fsync: true });
    return { session: structuredClone(saved), removedUserMessage: removed[0]! };
  } catch (error) {
    // A failed save leaves the live session as it was, so a retry can refresh it.
    session.messages = before.messages;
    session.toolCalls = before.toolCalls;
    throw error;
  }
}
