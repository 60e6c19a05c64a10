import type { CloseReport, SessionStore } from './store-types.js';

export interface ShutdownHookOptions {
  /** @default ['SIGTERM', 'SIGINT'] */
  signals?: NodeJS.Signals[];
  /** Called with the close report (or the error) before the process exits. */
  onClosed?: (report: CloseReport | null, error: unknown) => void | Promise<void>;
  /** Exit the process after close() settles. @default true */
  exit?: boolean;
}

/**
 * C2: wires `store.close()` (stop runs' checkpoints, drain memory commits, flushAll with
 * fsync, close the backend) to SIGTERM and SIGINT. Returns a function that removes the
 * handlers. A second signal while closing exits at once with code 130, as a user who
 * presses Ctrl-C twice expects.
 */
export function installShutdownHooks(
  store: SessionStore,
  options: ShutdownHookOptions = {},
): () => void {
  const signals = options.signals ?? ['SIGTERM', 'SIGINT'];
  let closing = false;
  const handler = (signal: NodeJS.Signals) => {
    if (closing) {
      process.exit(130);
    }
    closing = true;
    void store
      .close()
      .then(
        async (report) => {
          await options.onClosed?.(report, null);
          return report.flush.failed.length === 0 ? 0 : 1;
        },
        async (error: unknown) => {
          await options.onClosed?.(null, error);
          return 1;
        },
      )
      .then((code) => {
        if (options.exit !== false) process.exit(signal === 'SIGINT' && code === 0 ? 130 : code);
      });
  };
  for (const signal of signals) process.on(signal, handler);
  return () => {
    for (const signal of signals) process.off(signal, handler);
  };
}
