import {
  JournalConflictError,
  JournalSealedError,
  RevisionConflictError,
  type RunHandle,
  RunNotActiveError,
  type Session,
  type SessionStore,
  StoreClosedError,
} from '@keepsake/core';
import type { UIMessage, UIMessageChunk } from 'ai';
import { journalEventOf } from './chunk-records.js';
import { messageFromChunks } from './message-from-chunks.js';
import { storedMessageOf } from './stored-message.js';

export interface ProduceOptions {
  store: SessionStore;
  handle: RunHandle;
  /** The model's UI message stream. */
  stream: ReadableStream<UIMessageChunk>;
  /** Aborted to stop the model (a stop, or the run lost its turn). */
  controller: AbortController;
  /** The answer's message id when the stream's `start` chunk names none. */
  messageId: string;
  /** Called once the answer is saved (E5), with the session as saved. */
  onSaved(session: Session, responseMessage: UIMessage): Promise<void>;
  onError(error: unknown): void;
}

/** Text stored in the error marker of a run whose stream threw (its message may hold secrets). */
export const STREAM_FAILED_TEXT = 'The model stream failed.';

/**
 * Streams the model's chunks into the run's journal, one at a time: a chunk is read from
 * the model only once the previous one's append resolved, as durable as the store's
 * `journal.durability` makes it (E2). Readers follow the journal, never this loop, so what
 * any page saw is stored, and the loop does not depend on any page staying connected.
 *
 * The run ends exactly once:
 * - the stream ended: the answer, built from the chunks by the AI SDK's reducer, is written
 *   with `complete()` (E5), then `onSaved` runs: the one save, whoever was watching;
 * - the stream carried an `error` chunk or threw: `fail()` keeps the partial answer under an
 *   error marker (E6);
 * - the run was stopped (here or by another instance, E6) or lost its turn (D4): the model is
 *   aborted and the partial answer is what the cancel kept;
 * - this process dies: nothing runs here, and the next load after the recovery grace keeps
 *   the journaled chunks with an interrupted marker (F1).
 */
export async function produce(options: ProduceOptions): Promise<void> {
  const { store, handle, controller, messageId } = options;
  const reader = options.stream.getReader();
  const chunks: UIMessageChunk[] = [];
  let streamError: string | null = null;
  const append = async (chunk: UIMessageChunk) => {
    await handle.append(journalEventOf(chunk));
    chunks.push(chunk);
  };
  // A stop from this process ends the run handle at once; the model should stop as soon.
  const unsubscribe = store.on((event) => {
    if (event.type === 'run' && event.runId === handle.runId && !handle.active) {
      controller.abort('stopped');
    }
  });
  const stopReading = () => void reader.cancel('stopped').catch(() => {});
  controller.signal.addEventListener('abort', stopReading, { once: true });
  try {
    for (;;) {
      const next = await reader.read();
      // Stopped, or fenced out by another instance's recovery (D4): the model stops too.
      if (next.done || controller.signal.aborted || !handle.active) break;
      let chunk = next.value;
      if (chunks.length === 0) {
        // The answer's id comes first, so every replay (and the stored answer) has it.
        if (chunk.type === 'start') chunk = { ...chunk, messageId: chunk.messageId ?? messageId };
        else await append({ type: 'start', messageId });
      }
      if (chunk.type === 'error') streamError = chunk.errorText;
      await append(chunk);
    }
    if (!handle.active || controller.signal.aborted) {
      controller.abort('stopped');
      return await settleStopped(store, handle);
    }
    if (chunks.length === 0) await append({ type: 'start', messageId });
    if (streamError !== null) {
      await handle.fail({ message: streamError });
      return;
    }
    const answer = await messageFromChunks(chunks, messageId);
    const session = await completeWith(handle, answer);
    await options.onSaved(session, answer).catch(options.onError);
  } catch (error) {
    controller.abort('failed');
    if (lostTheTurn(error)) return await settleStopped(store, handle);
    try {
      options.onError(error);
    } finally {
      await handle.fail({ message: STREAM_FAILED_TEXT }).catch((failure: unknown) => {
        if (!lostTheTurn(failure)) options.onError(failure);
      });
    }
  } finally {
    unsubscribe();
    controller.signal.removeEventListener('abort', stopReading);
  }
}

async function completeWith(handle: RunHandle, answer: UIMessage): Promise<Session> {
  const assistantMessages = [storedMessageOf(answer, 'answer')];
  // complete() re-reads and retries after a conflict itself; another instance renaming or
  // saving the chat can race it again, so a few more rounds.
  for (let attempt = 1; ; attempt++) {
    try {
      return await handle.complete({ assistantMessages });
    } catch (error) {
      if (!RevisionConflictError.isInstance(error) || attempt >= 3) throw error;
    }
  }
}

/**
 * A run stopped by another instance (its cancel sealed the journal) or taken over by its
 * repair still holds its handle here; `complete()` on the fenced handle ends it and writes
 * nothing (D4: the RunNotActiveError it throws is the expected outcome). Every chunk whose
 * append resolved is already in the stored answer; a chunk refused with RunTakenOverError
 * was never acknowledged.
 */
async function settleStopped(store: SessionStore, handle: RunHandle): Promise<void> {
  if (!handle.active) return;
  try {
    await store.load(handle.sessionId, { refresh: true });
    await handle.complete();
  } catch (error) {
    if (!lostTheTurn(error)) throw error;
  }
}

/** The run no longer owns its turn: stopped here or elsewhere, recovered, or the store closed. */
function lostTheTurn(error: unknown): boolean {
  return (
    JournalSealedError.isInstance(error) ||
    JournalConflictError.isInstance(error) ||
    RunNotActiveError.isInstance(error) ||
    StoreClosedError.isInstance(error)
  );
}
