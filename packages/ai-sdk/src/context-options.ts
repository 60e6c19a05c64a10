import { InvalidConfigError, type SessionStore } from '@keepsake/core';

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
   * @deprecated Ignored: readers follow answers with core's `store.followRun` (E9), which
   * uses the store's own `recovery.graceMs` to recover an answer whose process died (F1).
   * Still accepted so existing code keeps working.
   */
  graceMs?: number;
  /**
   * How often a reader polls the journal of an answer another process streams (answers
   * this process streams wake their readers at once, with no read).
   * @default the store's `runs.followPollMs` (250)
   */
  pollIntervalMs?: number;
  /**
   * How long after an answer ended `resumeExistingStream` still replays it (store clock): a
   * client that lost its stream and reconnects without reloading gets the rest of the answer
   * and how it ended (completed, or the marker of a stop or crash). `useChat`'s default
   * transport rebuilds the message from the replay's `start` chunk, so a page that reloaded
   * meanwhile shows it once. 0 replays only an answer still in progress.
   * @default 300000 (5 minutes)
   */
  replayEndedWithinMs?: number;
  /**
   * Errors of background work no request is waiting for: a model stream that threw, an
   * `onFinish` that threw, a save that failed (the answer then stays in the journal and is
   * recovered). Never swallowed. An `onError` that throws (or rejects) is reported with
   * `console.error` and changes nothing else: the run still ends, under its error marker.
   * @default console.error
   */
  onError?: (error: unknown, context: { chatId: string; runId: string }) => void;
}

export interface ResolvedOptions {
  store: SessionStore;
  waitUntil: ((promise: Promise<unknown>) => void) | null;
  /** Null: the store's own `runs.followPollMs`. */
  pollIntervalMs: number | null;
  replayEndedWithinMs: number;
  onError: (error: unknown, context: { chatId: string; runId: string }) => void;
}

const knownOptions: ReadonlySet<string> = new Set([
  'store',
  'waitUntil',
  'graceMs',
  'pollIntervalMs',
  'replayEndedWithinMs',
  'onError',
]);

export function resolveOptions(options: ResumableStreamContextOptions): ResolvedOptions {
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
  // Checked as before (a bad value is still a mistake worth reporting), then unused.
  positive('graceMs', 30_000);
  const replayEndedWithinMs = options.replayEndedWithinMs ?? 300_000;
  if (
    typeof replayEndedWithinMs !== 'number' ||
    !Number.isFinite(replayEndedWithinMs) ||
    replayEndedWithinMs < 0
  ) {
    throw new InvalidConfigError(
      'Option `replayEndedWithinMs` must be a non-negative number of milliseconds',
    );
  }
  return {
    store,
    waitUntil: options.waitUntil ?? null,
    replayEndedWithinMs,
    pollIntervalMs:
      options.pollIntervalMs === undefined
        ? null
        : Math.min(2_147_483_647, Math.ceil(positive('pollIntervalMs', 250))),
    onError:
      options.onError ??
      ((error, context) =>
        console.error(`@keepsake/ai-sdk: chat ${context.chatId}, run ${context.runId}:`, error)),
  };
}
