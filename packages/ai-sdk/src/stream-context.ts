import {
  type CancelOutcome,
  InvalidConfigError,
  NotFoundError,
  type RunHandle,
  type SessionStore,
} from '@keepsake/core';
import type { InferUIMessageChunk, UIMessage, UIMessageChunk } from 'ai';
import { chatMessagesOf } from './chat-view.js';
import { answerMessageIdOf, sessionIdOfChat } from './ids.js';
import { tailJournal } from './journal-tail.js';
import { JournalWaker } from './journal-waker.js';
import { replayStream } from './replay-stream.js';
import { produce } from './run-producer.js';
import { type RunStart, startRun } from './run-start.js';

export interface ResumableStreamContextOptions {
  /** The store chats live in; every server instance opens its own over the same backend. */
  store: SessionStore;
  /**
   * Keeps a serverless function alive until the answer is stored (`after` in Next.js,
   * `ctx.waitUntil` in workers), as in `resumable-stream`. A long-lived server needs none:
   * the answer is produced in the background whether or not any page is connected.
   * @default null
   */
  waitUntil?: ((promise: Promise<unknown>) => void) | null;
  /**
   * The store's `recovery.graceMs`. A reader that sees no new chunk for this long from an
   * answer another process streams loads the chat, which recovers it if that process died
   * (F1): the stream then ends with the partial answer and a marker instead of hanging.
   * @default 30000 (core's default grace)
   */
  graceMs?: number;
  /**
   * How often a reader polls the journal of an answer another process streams (answers
   * this process streams wake their readers at once).
   * @default 250
   */
  pollIntervalMs?: number;
  /**
   * Errors of background work no request is waiting for: a model stream that threw, an
   * `onFinish` that threw, a save that failed (the answer then stays in the journal and is
   * recovered). Never swallowed. @default console.error
   */
  onError?: (error: unknown, context: { chatId: string; runId: string }) => void;
}

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
   * The stream of the answer the chat is waiting for, replayed from its first chunk, or null
   * when there is none (answer with 204: `useChat({ resume: true })` then stays as it is).
   * Works on any instance over the same backend and after the producing process died.
   */
  resumeExistingStream(
    chatId: string,
  ): Promise<ReadableStream<InferUIMessageChunk<UI_MESSAGE>> | null>;
  /** The run id of the answer the chat is waiting for, or null. */
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
  const waker = new JournalWaker(store);
  const live = new Map<string, LiveAnswer>();
  const readers = new Set<AbortController>();

  const replay = (sessionId: string, runId: string): ReadableStream<UIMessageChunk> => {
    const controller = new AbortController();
    readers.add(controller);
    const items = tailJournal({
      store,
      waker,
      sessionId,
      runId,
      afterSequence: 0,
      signal: controller.signal,
      pollIntervalMs: settings.pollIntervalMs,
      graceMs: settings.graceMs,
      isLocal: () => live.has(runId),
    });
    return replayStream(
      (async function* () {
        try {
          yield* items;
        } finally {
          readers.delete(controller);
        }
      })(),
      { fallbackMessageId: answerMessageIdOf(runId), abort: () => controller.abort() },
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
    const report = (error: unknown) => settings.onError(error, { chatId, runId });
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
        report(error);
        await handle.fail({ message: 'The answer could not be started.' }).catch(report);
      })
      .finally(() => live.delete(runId));
    live.set(runId, { handle, controller, finished });
    settings.waitUntil?.(finished);
  };

  return {
    async resumableStream(chatId, makeStream, streamOptions) {
      const sessionId = sessionIdOfChat(chatId);
      const start = await startRun(store, sessionId, streamOptions.message, streamOptions.trigger);
      if (start.kind === 'started') begin(chatId, start, makeStream, streamOptions.onFinish);
      return replay(sessionId, start.runId) as ReadableStream<InferUIMessageChunk<UI_MESSAGE>>;
    },

    async resumeExistingStream(chatId) {
      const sessionId = sessionIdOfChat(chatId);
      const runId = await activeRunOf(store, sessionId);
      if (runId === null) return null;
      return replay(sessionId, runId) as ReadableStream<InferUIMessageChunk<UI_MESSAGE>>;
    },

    hasExistingStream(chatId) {
      return activeRunOf(store, sessionIdOfChat(chatId));
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
      waker.close();
    },
  };
}

async function activeRunOf(store: SessionStore, sessionId: string): Promise<string | null> {
  try {
    // refresh: another instance may have started, ended or recovered the answer.
    const session = await store.load(sessionId, { refresh: true });
    return session.pending?.streamId ?? null;
  } catch (error) {
    if (NotFoundError.isInstance(error)) return null;
    throw error;
  }
}

interface ResolvedOptions {
  store: SessionStore;
  waitUntil: ((promise: Promise<unknown>) => void) | null;
  graceMs: number;
  pollIntervalMs: number;
  onError: (error: unknown, context: { chatId: string; runId: string }) => void;
}

const knownOptions: ReadonlySet<string> = new Set([
  'store',
  'waitUntil',
  'graceMs',
  'pollIntervalMs',
  'onError',
]);

function resolveOptions(options: ResumableStreamContextOptions): ResolvedOptions {
  if (typeof options !== 'object' || options === null) {
    throw new InvalidConfigError(
      'createResumableStreamContext needs an options object with a `store`',
    );
  }
  for (const key of Object.keys(options)) {
    if (!knownOptions.has(key)) {
      throw new InvalidConfigError(
        `Unknown option \`${key}\` of createResumableStreamContext (the options are ${[...knownOptions].join(', ')})`,
      );
    }
  }
  const { store } = options;
  if (typeof store !== 'object' || store === null || typeof store.beginRun !== 'function') {
    throw new InvalidConfigError(
      'Option `store` must be a Keepsake SessionStore (createSessionStore({ adapter }))',
    );
  }
  const positive = (name: 'graceMs' | 'pollIntervalMs', fallback: number): number => {
    const value = options[name];
    if (value === undefined) return fallback;
    if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
      throw new InvalidConfigError(`Option \`${name}\` must be a positive number of milliseconds`);
    }
    return value;
  };
  if (
    options.waitUntil !== undefined &&
    options.waitUntil !== null &&
    typeof options.waitUntil !== 'function'
  ) {
    throw new InvalidConfigError(
      'Option `waitUntil` must be a function (promise) => void, or null',
    );
  }
  if (options.onError !== undefined && typeof options.onError !== 'function') {
    throw new InvalidConfigError(
      'Option `onError` must be a function (error, { chatId, runId }) => void',
    );
  }
  return {
    store,
    waitUntil: options.waitUntil ?? null,
    graceMs: positive('graceMs', 30_000),
    pollIntervalMs: positive('pollIntervalMs', 250),
    onError:
      options.onError ??
      ((error, context) =>
        console.error(`@keepsake/ai-sdk: chat ${context.chatId}, run ${context.runId}:`, error)),
  };
}
