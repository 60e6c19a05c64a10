import { BackendError, BackendUnavailableError, KeepsakeError } from '@keepsake/core';
import {
  errnoClass,
  isAlreadyExistsErrno,
  isNotFoundErrno,
  isRetryableErrno,
} from './errno-table.js';

export const ADAPTER_NAME = 'fs';

/** The POSIX error code of a filesystem error, if it has one. */
export function errorCode(error: unknown): string | undefined {
  if (typeof error === 'object' && error !== null && 'code' in error) {
    const code = (error as { code: unknown }).code;
    return typeof code === 'string' ? code : undefined;
  }
  return undefined;
}

/** Absence, where absence is meant: a missing file or a missing parent directory. */
export function isNotFound(error: unknown): boolean {
  return isNotFoundErrno(errorCode(error));
}

export function isAlreadyExists(error: unknown): boolean {
  return isAlreadyExistsErrno(errorCode(error));
}

/**
 * A2: every other failure (EACCES, EIO, ENOSPC, EMFILE…) is a typed error naming the
 * operation and the path, with the original error as `cause` — never "not found", never
 * corruption. Its errno decides which, by the table in errno-table.ts: a server that cannot
 * be reached is `BackendUnavailableError`; anything else a `BackendError`, retryable exactly
 * when the same call may succeed if made again. Typed Keepsake errors pass through unchanged.
 */
export function toBackendError(error: unknown, operation: string): KeepsakeError {
  if (KeepsakeError.isInstance(error)) return error;
  const code = errorCode(error);
  switch (errnoClass(code)) {
    case 'unreachable': {
      const reason = error instanceof Error ? error.message : String(error);
      return new BackendUnavailableError(ADAPTER_NAME, `could not ${operation}: ${reason}`, {
        cause: error,
      });
    }
    case 'full':
      return new BackendError(
        ADAPTER_NAME,
        `${operation} (the filesystem is full or over quota: free space, then retry)`,
        { cause: error },
      );
    default:
      return new BackendError(ADAPTER_NAME, operation, {
        cause: error,
        isRetryable: isRetryableErrno(code),
      });
  }
}

/** Runs `action`, turning any untyped failure into a typed error for `operation`. */
export async function backendCall<T>(operation: string, action: () => Promise<T>): Promise<T> {
  try {
    return await action();
  } catch (error) {
    throw toBackendError(error, operation);
  }
}
