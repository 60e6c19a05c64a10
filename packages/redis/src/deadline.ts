import { BackendUnavailableError } from '@keepsake/core';
import { ADAPTER_NAME } from './errors.js';

/**
 * Fails with a retryable error once `ms` pass without a reply. The commands may still be
 * sent and run later (the error says the outcome is unknown); their late answer is dropped.
 */
export async function withDeadline<T>(work: Promise<T>, ms: number, operation: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new BackendUnavailableError(
            ADAPTER_NAME,
            `${operation}: no reply within ${ms} ms (the cluster is unreachable; the write may or may not be applied later)`,
          ),
        ),
      ms,
    );
  });
  work.catch(() => undefined);
  try {
    return await Promise.race([work, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
