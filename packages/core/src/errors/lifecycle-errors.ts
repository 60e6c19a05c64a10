import { codeGuard, KeepsakeError } from './keepsake-error.js';

// Errors of the store's own lifecycle: closing (C5) and draining memory commits (G6).

/** C5: the store is closing or closed. */
export class StoreClosedError extends KeepsakeError {
  static override isInstance = codeGuard<StoreClosedError>('store_closed');
  constructor(operation: string) {
    super('store_closed', `Cannot ${operation}: the session store is closing or closed`);
    this.name = 'StoreClosedError';
  }
}

/** G6: a drain left a session's completed turns uncommitted (no agent, or its commit failed). */
export class MemoryCommitIncompleteError extends KeepsakeError {
  static override isInstance = codeGuard<MemoryCommitIncompleteError>('memory_commit_incomplete');
  readonly sessionId: string;
  constructor(sessionId: string) {
    super(
      'memory_commit_incomplete',
      `Session "${sessionId}" still has uncommitted memory: no agent could commit it, or its commit failed; register an agent or pass one to drain({ agents })`,
      { isRetryable: true },
    );
    this.name = 'MemoryCommitIncompleteError';
    this.sessionId = sessionId;
  }
}

/**
 * An operation gave up waiting; retryable. Nothing in this repository throws it yet: it is
 * for adapters whose calls can time out (network backends).
 */
export class TimeoutError extends KeepsakeError {
  static override isInstance = codeGuard<TimeoutError>('timeout');
  constructor(message: string) {
    super('timeout', message, { isRetryable: true });
    this.name = 'TimeoutError';
  }
}
