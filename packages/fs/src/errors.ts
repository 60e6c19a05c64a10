import { BackendError, KeepsakeError } from '@keepsake/core';

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
  return errorCode(error) === 'ENOENT';
}

export function isAlreadyExists(error: unknown): boolean {
  return errorCode(error) === 'EEXIST';
}

/**
 * A2: every other failure (EACCES, EIO, ENOSPC, EMFILE…) is a BackendError naming the
 * operation and the path, with the original error as `cause` — never "not found", never
 * corruption. Typed Keepsake errors pass through unchanged.
 */
export function toBackendError(error: unknown, operation: string): KeepsakeError {
  if (KeepsakeError.isInstance(error)) return error;
  return new BackendError(ADAPTER_NAME, operation, { cause: error });
}

/** Runs `action`, turning any untyped failure into a BackendError for `operation`. */
export async function backendCall<T>(operation: string, action: () => Promise<T>): Promise<T> {
  try {
    return await action();
  } catch (error) {
    throw toBackendError(error, operation);
  }
}
