/**
 * Folder shutdown/: flushing every cached session with fsync (flush-sessions.ts, C1) and
 * the process hooks that close stores on SIGTERM and SIGINT (this file, C2). The close order
 * itself (C2, C5) is store.ts's.
 */

import type { CloseReport } from '../store-types.js';

/**
 * What the hooks close: a SessionStore, or anything that closes several stores and
 * returns one combined report (a server with one store per tenant).
 */
export interface Closable {
  close(): Promise<CloseReport>;
}

export interface ShutdownHookOptions {
  /** Runs first, before any store closes (stop accepting requests, finish runs). */
  beforeClose?: () => Promise<void>;
  /** @default ['SIGTERM', 'SIGINT'] */
  signals?: NodeJS.Signals[];
  /** Called with the close report (or the error) before the process exits. */
  onClosed?: (report: CloseReport | null, error: unknown) => void | Promise<void>;
  /** Exit the process after close() settles. @default true */
  exit?: boolean;
}

/**
 * C2: wires `store.close()` (stop runs' checkpoints, drain memory commits, flushAll with
 * fsync, close the backend) to SIGTERM and SIGINT; `beforeClose` runs first. Returns a function that removes the
 * handlers. A second signal while closing exits at once with code 130, as a user who
 * presses Ctrl-C twice expects.
 */
export function installShutdownHooks(
  target: Closable,
  options: ShutdownHookOptions = {},
): () => void {
  const signals = options.signals ?? ['SIGTERM', 'SIGINT'];
  let closing = false;
  const handler = (signal: NodeJS.Signals) => {
    if (closing) {
      process.exit(130);
    }
    closing = true;
    void (async () => {
      await options.beforeClose?.();
      return target.close();
    })()
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
