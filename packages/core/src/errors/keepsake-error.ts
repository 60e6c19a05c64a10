/**
 * Folder errors/: every typed error core throws, by what went wrong: the call as made (A1, A3,
 * A4, B5, D1: input-errors.ts), what is stored and the backend (A2, B4, B8, H1: storage-errors.ts),
 * runs and journals (D4, E2, E7: run-errors.ts), the store's own lifecycle (C5, G6:
 * lifecycle-errors.ts). This file is their common base.
 */

/**
 * Typed errors. Every error Keepsake throws is a `KeepsakeError` with a stable `code`;
 * callers branch on `code` or on `XError.isInstance(error)`, never on message text.
 * The `Symbol.for` marker keeps `isInstance` working when two copies of the package are
 * loaded (a workspace and a published tarball, for example), where `instanceof` fails.
 */
const keepsakeMarker = Symbol.for('keepsake.error');

export type KeepsakeErrorCode =
  | 'invalid_id'
  | 'not_found'
  | 'already_exists'
  | 'revision_conflict'
  | 'corrupt_document'
  | 'limit_exceeded'
  | 'shrink_refused'
  | 'summary_only'
  | 'reserved_field'
  | 'lock_reentry'
  | 'backend_unavailable'
  | 'backend_error'
  | 'invalid_config'
  | 'invalid_input'
  | 'store_closed'
  | 'session_busy'
  | 'run_not_active'
  | 'journal_sealed'
  | 'journal_conflict'
  | 'journal_record_invalid'
  | 'capability_missing'
  | 'memory_commit_incomplete'
  | 'timeout';

export interface KeepsakeErrorOptions {
  cause?: unknown;
  isRetryable?: boolean;
}

export class KeepsakeError extends Error {
  readonly [keepsakeMarker] = true;
  readonly code: KeepsakeErrorCode;
  readonly isRetryable: boolean;

  constructor(code: KeepsakeErrorCode, message: string, options: KeepsakeErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'KeepsakeError';
    this.code = code;
    this.isRetryable = options.isRetryable ?? false;
  }

  static isInstance(error: unknown): error is KeepsakeError {
    return (
      typeof error === 'object' &&
      error !== null &&
      (error as Record<symbol, unknown>)[keepsakeMarker] === true
    );
  }
}

/** Builds `isInstance` for a subclass: marker check plus the stable code. */
export function codeGuard<T extends KeepsakeError>(code: KeepsakeErrorCode) {
  return (error: unknown): error is T => KeepsakeError.isInstance(error) && error.code === code;
}
