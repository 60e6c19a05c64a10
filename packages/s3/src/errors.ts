import {
  BackendError,
  BackendUnavailableError,
  KeepsakeError,
  WriteOutcomeUnknownError,
} from '@keepsake/core';

/** The name every error of this adapter carries (core's `adapter` field, reports). */
export const ADAPTER_NAME = 's3';

const capabilityErrorMarker = Symbol.for('keepsake.s3.capability-error');

/**
 * The S3 endpoint does not do what the adapter needs: it ignores conditional writes
 * (`If-None-Match: *` or `If-Match` on PUT), or it needs a compatibility option that is not
 * set. Thrown by `open()`, so a server that would silently lose concurrent updates is
 * reported at startup; the message names the option to set. A `BackendError` (its `code` is
 * `backend_error`), never retryable: the same server gives the same answer.
 */
export class S3CapabilityError extends BackendError {
  readonly [capabilityErrorMarker] = true;
  /** What the probe found missing: `if-none-match`, `if-match` or `bucket`. */
  readonly capability: string;
  readonly endpoint: string;
  constructor(capability: string, endpoint: string, operation: string) {
    super(ADAPTER_NAME, operation, { isRetryable: false });
    this.name = 'S3CapabilityError';
    this.capability = capability;
    this.endpoint = endpoint;
  }

  /** Works across copies of this package, where `instanceof` does not. */
  static is(error: unknown): error is S3CapabilityError {
    return (
      typeof error === 'object' &&
      error !== null &&
      (error as Record<symbol, unknown>)[capabilityErrorMarker] === true
    );
  }
}

/**
 * What a failed S3 call means for the adapter:
 * - `missing`: 404 (no such key, or a HEAD of a missing object);
 * - `precondition`: 412, a conditional request whose condition did not hold;
 * - `transient`: worth retrying: 5xx, throttling, 409 ConditionalRequestConflict (another
 *   conditional write of that key in flight), a request timeout, a reset connection. `sent`
 *   is false only when the request certainly never reached the server (connection refused),
 *   so a write of that attempt certainly did not land;
 * - `permanent`: anything else (access denied, no such bucket, a bad request).
 */
export type FailureKind =
  | { readonly kind: 'missing' }
  | { readonly kind: 'precondition' }
  | { readonly kind: 'transient'; readonly sent: boolean }
  | { readonly kind: 'permanent' };

const TRANSIENT_NAMES = new Set([
  'ConditionalRequestConflict',
  'OperationAborted',
  'RequestTimeout',
  'RequestTimeoutException',
  'SlowDown',
  'Throttling',
  'ThrottlingException',
  'TooManyRequests',
  'TooManyRequestsException',
  'ServiceUnavailable',
  'InternalError',
  'TimeoutError',
  'AbortError',
]);

const NOT_SENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN']);
const NETWORK_CODES = new Set([
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'ECONNABORTED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_SOCKET',
]);

interface SdkErrorShape {
  name?: string;
  code?: string;
  $metadata?: { httpStatusCode?: number };
  $response?: { statusCode?: number };
  cause?: unknown;
}

/** The HTTP status of an SDK error, when the server answered. */
export function statusOf(error: unknown): number | undefined {
  const shape = error as SdkErrorShape | null;
  return shape?.$metadata?.httpStatusCode ?? shape?.$response?.statusCode;
}

function networkCode(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && typeof current === 'object' && current !== null; depth++) {
    const code = (current as SdkErrorShape).code;
    if (typeof code === 'string') return code;
    current = (current as SdkErrorShape).cause;
  }
  return undefined;
}

export function classify(error: unknown): FailureKind {
  const status = statusOf(error);
  const name = (error as SdkErrorShape | null)?.name ?? '';
  if (status === 404 || name === 'NoSuchKey' || name === 'NotFound') return { kind: 'missing' };
  if (status === 412 || name === 'PreconditionFailed') return { kind: 'precondition' };
  const code = networkCode(error);
  if (code !== undefined && NOT_SENT_CODES.has(code)) return { kind: 'transient', sent: false };
  if (
    (status !== undefined && (status >= 500 || status === 429 || status === 409)) ||
    TRANSIENT_NAMES.has(name) ||
    (code !== undefined && NETWORK_CODES.has(code)) ||
    (status === undefined && !KeepsakeError.isInstance(error))
  ) {
    // No status at all: the connection failed (or the call was aborted by its deadline).
    return { kind: 'transient', sent: true };
  }
  return { kind: 'permanent' };
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const status = statusOf(error);
  return status === undefined
    ? `${error.name}: ${error.message}`
    : `${error.name} (HTTP ${status})`;
}

/**
 * Maps a failure that the adapter gives up on to a typed Keepsake error: transient ones are
 * `BackendUnavailableError` (retryable), or `WriteOutcomeUnknownError` for a write that may
 * have landed; anything else is a `BackendError` that names the operation.
 */
export function toKeepsakeError(
  error: unknown,
  operation: string,
  options: { write?: boolean } = {},
): KeepsakeError {
  if (KeepsakeError.isInstance(error)) return error;
  const failure = classify(error);
  if (failure.kind === 'transient') {
    if (options.write === true && failure.sent) {
      return new WriteOutcomeUnknownError(ADAPTER_NAME, operation, { cause: error });
    }
    return new BackendUnavailableError(ADAPTER_NAME, `${operation}: ${describe(error)}`, {
      cause: error,
    });
  }
  return new BackendError(ADAPTER_NAME, operation, { cause: error });
}
