import { type Deferred, deferred } from './fixtures.js';
import type {
  AdapterMethod,
  RecordingFaultInjectingAdapter,
} from './recording-fault-injecting-adapter.js';

/** A matching adapter call held open (fault injection): the test sees it start and lets it go. */
export interface HeldAdapterCall {
  /** Resolves when the first matching call has started and is being held. */
  readonly entered: Promise<void>;
  /** Lets every held call go through to the real adapter. */
  release(): void;
}

export interface HoldAdapterCallOptions {
  method: AdapterMethod;
  /** Only calls whose arguments match. */
  match: (args: readonly unknown[]) => boolean;
  /** Hold at most this many calls. @default unlimited */
  times?: number;
  /** Called as each matching call starts, before it is held (to count calls). */
  onCall?: () => void;
}

/**
 * Holds matching calls of `adapter` until `release()`, so a test can act while a write or
 * read of the store is in flight. The held call then runs for real.
 */
export function holdAdapterCall(
  adapter: RecordingFaultInjectingAdapter,
  options: HoldAdapterCallOptions,
): HeldAdapterCall {
  const entered: Deferred = deferred();
  const release: Deferred = deferred();
  adapter.inject({
    method: options.method,
    match: options.match,
    ...(options.times === undefined ? {} : { times: options.times }),
    replace: async (_args, real) => {
      options.onCall?.();
      entered.resolve();
      await release.promise;
      return real();
    },
  });
  return { entered: entered.promise, release: () => release.resolve() };
}

/** `holdAdapterCall` for the next write of one session's document. */
export function holdNextSessionWrite(
  adapter: RecordingFaultInjectingAdapter,
  sessionId: string,
): HeldAdapterCall {
  return holdAdapterCall(adapter, {
    method: 'putDocument',
    times: 1,
    match: ([collection, id]) => collection === 'sessions' && id === sessionId,
  });
}
