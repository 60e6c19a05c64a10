import {
  type CancelOutcome,
  NotFoundError,
  type RunHandle,
  type Session,
  type SessionStore,
} from '@keepsake/core';
import type { InferUIMessageChunk, UIMessage, UIMessageChunk } from 'ai';
import { chatMessagesOf } from './chat-view.js';
import {
  type ResolvedOptions,
  type ResumableStreamContextOptions,
  resolveOptions,
} from './context-options.js';
import { answerMessageIdOf, sessionIdOfChat } from './ids.js';
import { replayStream } from './replay-stream.js';
import { produce } from './run-producer.js';
import { type RunStart, startRun } from './run-start.js';

/** What `makeStream` gets to produce the answer. */
export interface MakeStreamContext<UI_MESSAGE extends UIMessage> {
  chatId: string;
  /** The Keepsake run (and stream) id of this answer. */
  runId: string;
  /** The id the answer gets when the stream's `start` chunk names none. */
  messageId: string;
  /** The whole chat as stored, ending with the new user message: give it to the model. */
  messages: UI_MESSAGE[];
  /** Aborted when the answer is stopped: pass it to `streamText` so the model stops too. */
  abortSignal: AbortSignal;
}

export type MakeStream<UI_MESSAGE extends UIMessage> = (
  context: MakeStreamContext<UI_MESSAGE>,
) =>
  | ReadableStream<InferUIMessageChunk<UI_MESSAGE>>
  | Promise<ReadableStream<InferUIMessageChunk<UI_MESSAGE>>>;

export interface ResumableStreamOptions<UI_MESSAGE extends UIMessage> {
  /** The user's new message (`useChat` sends it; send only the last one, see the README). */
  message: UI_MESSAGE;
  /**
   * `regenerate-message`: the message is in the chat already; what follows it is dropped
   * (a deliberate shrink, B5) and it is answered again. Any other trigger refuses a message
   * id the chat has (`InvalidInputError`). @default 'submit-message'
   */
  trigger?: 'submit-message' | 'regenerate-message';
  /**
   * For `regenerate-message` (B4): the id of the last message the client's chat had before
   * it regenerated. When the stored chat has moved on since (another tab or instance added
   * messages), the regenerate is refused with `RevisionConflictError` and nothing changes;
   * reload the chat and ask again. Without it, a regenerate is refused when a later
   * question follows the regenerated message in the stored chat (it would be dropped).
   */
  lastMessageId?: string;
  /**
   * Called once the answer is stored (E5), exactly once per answer, also when no page was
   * connected any more. The save is already done: use it for what follows a finished answer.
   */
  onFinish?: (event: {
    chatId: string;
    runId: string;
    messages: UI_MESSAGE[];
    responseMessage: UI_MESSAGE;
  }) => void | Promise<void>;
}

export type { ResumableStreamContextOptions };

export interface ResumableStreamContext<UI_MESSAGE extends UIMessage = UIMessage> {
  /**
   * Starts answering `options.message` and returns the answer's stream, read from the
   * journal (hand it to `createUIMessageStreamResponse`). The user message is stored before
   * `makeStream` runs (E1); the answer is produced in the background, so a closed tab stops
   * nothing. Sending the message that is being answered again (a retried request) returns
   * that answer's stream instead of answering twice; another message while an answer
   * streams is refused with `SessionBusyError` (E7).
   */
  resumableStream(
    chatId: string,
    makeStream: MakeStream<UI_MESSAGE>,
    options: ResumableStreamOptions<UI_MESSAGE>,
  ): Promise<ReadableStream<InferUIMessageChunk<UI_MESSAGE>>>;
  /**
   * The stream of the answer the chat is waiting for, replayed from its first chunk to its
   * ending (E9), or else of its last answer if that ended within `replayEndedWithinMs` (a
   * client that reconnects after the end learns how it ended and what was kept), or null
   * (answer with 204: `useChat({ resume: true })` then stays as it is). Works on any
   * instance over the same backend and after the producing process died.
   */
  resumeExistingStream(
    chatId: string,
  ): Promise<ReadableStream<InferUIMessageChunk<UI_MESSAGE>> | null>;
  /** The run id of the answer `resumeExistingStream` would replay, or null. */
  hasExistingStream(chatId: string): Promise<string | null>;
  /**
   * E6: stops the chat's answer, whichever instance streams it. The partial answer (every
   * chunk journaled) is kept under a `cancelled` marker; the open streams end with that
   * marker. `runId` stops only that answer (a stale stop never ends a newer one).
   */
  stopStream(chatId: string, options?: { runId?: string }): Promise<CancelOutcome>;
  /** Resolves once every answer this context is producing has ended (tests, shutdown). */
  settle(): Promise<void>;
  /** Ends this context's open streams; answers being produced go on (stop them with the store). */
  close(): void;
}

interface LiveAnswer {
  handle: RunHandle;
  controller: AbortController;
  finished: Promise<void>;
}

/**
 * Resumable AI SDK streams whose chunks are a Keepsake run's journal: a resume works after
 * a reload, on another server instance, and after the process producing the answer was
 * killed. Same shape as `resumable-stream`'s context, keyed by chat id: Keepsake already
 * knows which answer a chat is waiting for (its pending turn), so there is no stream id
 * to store.
 */
export function createResumableStreamContext<UI_MESSAGE extends UIMessage = UIMessage>(
  options: ResumableStreamContextOptions,
): ResumableStreamContext<UI_MESSAGE> {
  const settings = resolveOptions(options);
  const { store } = settings;
  const live = new Map<string, LiveAnswer>();
  const readers = new Set<AbortController>();

  const replay = (sessionId: string, runId: string): ReadableStream<UIMessageChunk> => {
    const controller = new AbortController();
    readers.add(controller);
    // E9: core follows the run to its one ending, whichever instance produces it.
    const items = store.followRun(sessionId, runId, {
      signal: controller.signal,
      ...(settings.pollIntervalMs === null ? {} : { pollIntervalMs: settings.pollIntervalMs }),
    });
    return replayStream(
      (async function* () {
        try {
          yield* items;
        } finally {
          readers.delete(controller);
        }
      })(),
      {
        fallbackMessageId: answerMessageIdOf(runId),
        abort: () => {
          // A stream cancelled before its first read never starts the generator above, so
          // its `finally` never runs: forget the reader here too.
          readers.delete(controller);
          controller.abort();
        },
      },
    );
  };

  const begin = (
    chatId: string,
    start: Extract<RunStart, { kind: 'started' }>,
    makeStream: MakeStream<UI_MESSAGE>,
    onFinish: ResumableStreamOptions<UI_MESSAGE>['onFinish'],
  ) => {
    const { handle, messages } = start;
    const runId = handle.runId;
    const messageId = answerMessageIdOf(runId);
    const controller = new AbortController();
    const report = (error: unknown) => reportSafely(settings.onError, error, { chatId, runId });
    const finished = (async () => {
      const stream = await makeStream({
        chatId,
        runId,
        messageId,
        messages: messages as UI_MESSAGE[],
        abortSignal: controller.signal,
      });
      await produce({
        store,
        handle,
        stream: stream as ReadableStream<UIMessageChunk>,
        controller,
        messageId,
        onError: report,
        onSaved: async (session, responseMessage) => {
          if (onFinish === undefined) return;
          await onFinish({
            chatId,
            runId,
            messages: (await chatMessagesOf(store, session)) as UI_MESSAGE[],
            responseMessage: responseMessage as UI_MESSAGE,
          });
        },
      });
    })()
      .catch(async (error: unknown) => {
        // makeStream itself threw: the question stays, under an error marker (E6).
        try {
          report(error);
        } finally {
          await handle.fail({ message: 'The answer could not be started.' }).catch(report);
        }
      })
      .finally(() => live.delete(runId));
    live.set(runId, { handle, controller, finished });
    try {
      settings.waitUntil?.(finished);
    } catch (error) {
      // The answer goes on regardless; a request is waiting for its stream, not for this.
      report(error);
    }
  };

  return {
    async resumableStream(chatId, makeStream, streamOptions) {
      const sessionId = sessionIdOfChat(chatId);
      const start = await startRun(
        store,
        sessionId,
        streamOptions.message,
        streamOptions.trigger,
        streamOptions.lastMessageId,
      );
      if (start.kind === 'started') begin(chatId, start, makeStream, streamOptions.onFinish);
      return replay(sessionId, start.runId) as ReadableStream<InferUIMessageChunk<UI_MESSAGE>>;
    },

    async resumeExistingStream(chatId) {
      const sessionId = sessionIdOfChat(chatId);
      const runId = await resumableRunOf(store, sessionId, settings.replayEndedWithinMs);
      if (runId === null) return null;
      return replay(sessionId, runId) as ReadableStream<InferUIMessageChunk<UI_MESSAGE>>;
    },

    hasExistingStream(chatId) {
      return resumableRunOf(store, sessionIdOfChat(chatId), settings.replayEndedWithinMs);
    },

    async stopStream(chatId, stopOptions = {}) {
      const sessionId = sessionIdOfChat(chatId);
      let outcome: CancelOutcome;
      try {
        outcome = await store.cancelRun(sessionId, stopOptions.runId);
      } catch (error) {
        if (NotFoundError.isInstance(error)) return { cancelled: false, reason: 'no-pending-turn' };
        throw error;
      }
      if (outcome.cancelled) live.get(outcome.runId)?.controller.abort('stopped');
      return outcome;
    },

    async settle() {
      while (live.size > 0) await Promise.all([...live.values()].map((answer) => answer.finished));
    },

    close() {
      for (const reader of readers) reader.abort();
      readers.clear();
    },
  };
}

/**
 * Calls the application's `onError`. It must not break what it reports on: one that throws
 * (or returns a rejected promise) is reported with `console.error`, with the error it was
 * given, and the run goes on to its end.
 */
function reportSafely(
  onError: ResolvedOptions['onError'],
  error: unknown,
  context: { chatId: string; runId: string },
): void {
  const reporterFailed = (failure: unknown) =>
    console.error(
      `@keepsake/ai-sdk: onError threw while reporting an error of chat ${context.chatId}, run ${context.runId}:`,
      failure,
      'the error it was given:',
      error,
    );
  try {
    const result: unknown = onError(error, context);
    if (result instanceof Promise) result.catch(reporterFailed);
  } catch (failure) {
    reporterFailed(failure);
  }
}

/**
 * The answer a resume replays: the one the chat is waiting for, or else the chat's last
 * answer when it ended within `endedWithinMs` (store clock). A client that only reconnects
 * (no reload) after its answer ended, completed or cut off by a crash repair, gets the rest
 * and the ending instead of a 204 that leaves its partial answer on screen for good.
 */
async function resumableRunOf(
  store: SessionStore,
  sessionId: string,
  endedWithinMs: number,
): Promise<string | null> {
  let session: Session;
  try {
    // refresh: another instance may have started, ended or recovered the answer.
    session = await store.load(sessionId, { refresh: true });
  } catch (error) {
    if (NotFoundError.isInstance(error)) return null;
    throw error;
  }
  if (session.pending !== null) return session.pending.streamId;
  if (endedWithinMs <= 0) return null;
  const last = session.messages.at(-1);
  const runId = last?.marker?.runId ?? (last?.role === 'assistant' ? last.runId : undefined);
  if (last === undefined || runId === undefined || runId === null) return null;
  return store.clock.now() - last.createdAt <= endedWithinMs ? runId : null;
}
