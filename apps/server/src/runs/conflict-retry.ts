import { RevisionConflictError } from '@keepsake/core';

export interface ConflictRetryOptions {
  /** Attempts in all, the first included. @default 6 */
  attempts?: number;
  /** Called before each retry (metrics). */
  onRetry?: (attempt: number, error: RevisionConflictError) => void;
}

/**
 * B4 says a save that lost a race fails with a typed conflict and overwrites nothing. A
 * server operation that re-reads before it writes (rename, undo, starting a run) can then
 * simply run again on the fresh revision, so concurrent writers from several processes
 * lose nothing. The short randomized pause keeps two processes from colliding in lockstep.
 */
export async function retryOnConflict<T>(
  operation: () => Promise<T>,
  options: ConflictRetryOptions = {},
): Promise<T> {
  const attempts = options.attempts ?? 6;
  for (let attempt = 1; ; attempt++) {
    try {
      return await operation();
    } catch (error) {
      if (!RevisionConflictError.isInstance(error) || attempt >= attempts) throw error;
      options.onRetry?.(attempt, error);
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 10 * attempt));
    }
  }
}
