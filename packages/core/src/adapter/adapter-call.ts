import { KeepsakeError } from '../errors/keepsake-error.js';
import { BackendError } from '../errors/storage-errors.js';

/**
 * Runs an adapter call and makes sure whatever it throws is a typed Keepsake error
 * naming the adapter and the operation (an adapter that throws a plain Error still
 * produces a BackendError, never an untyped failure).
 */
export async function adapterCall<T>(
  adapterName: string,
  operation: string,
  call: () => Promise<T>,
): Promise<T> {
  try {
    return await call();
  } catch (cause) {
    if (KeepsakeError.isInstance(cause)) throw cause;
    throw new BackendError(adapterName, operation, { cause });
  }
}

export function toKeepsakeError(
  error: unknown,
  adapterName: string,
  operation: string,
): KeepsakeError {
  if (KeepsakeError.isInstance(error)) return error;
  return new BackendError(adapterName, operation, { cause: error });
}
