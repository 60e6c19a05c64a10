import { BackendError, BackendUnavailableError, KeepsakeError } from '@keepsake/core';
import { ReplyError } from 'ioredis';

/** The name every error of this adapter carries (core's `adapter` field, reports). */
export const ADAPTER_NAME = 'redis';

/**
 * B3: the Redis server cannot confirm the durability level the adapter was configured
 * with. Thrown by `open()` when the probe finds the server unable to confirm it (no AOF, an
 * `appendfsync` that is not `always` on a server without WAITAOF, too few replicas), so a
 * misconfigured server is reported at startup; and by a durable write or `sync()` whose
 * confirmation fell short (WAIT counted fewer replicas than asked before its timeout).
 *
 * A `code` of `backend_error`, like every failing backend; `level` says which level could
 * not be confirmed and `server` where.
 */
const durabilityErrorMarker = Symbol.for('keepsake.redis.durability-error');

export class RedisDurabilityError extends BackendError {
  readonly [durabilityErrorMarker] = true;
  readonly level: string;
  readonly server: string;
  constructor(
    level: string,
    server: string,
    operation: string,
    options: { cause?: unknown; isRetryable?: boolean } = {},
  ) {
    super(ADAPTER_NAME, operation, { isRetryable: options.isRetryable ?? false, ...options });
    this.name = 'RedisDurabilityError';
    this.level = level;
    this.server = server;
  }

  /** Works across copies of this package, where `instanceof` does not. */
  static is(error: unknown): error is RedisDurabilityError {
    return (
      typeof error === 'object' &&
      error !== null &&
      (error as Record<symbol, unknown>)[durabilityErrorMarker] === true
    );
  }
}

/**
 * Error codes (the first word of a Redis error reply) that say the command was not run
 * because the server or the cluster cannot serve it right now: retrying later is right.
 */
const UNAVAILABLE_REPLY_CODES = new Set([
  'LOADING',
  'BUSY',
  'MASTERDOWN',
  'CLUSTERDOWN',
  'TRYAGAIN',
  'READONLY',
  'NOREPLICAS',
]);

/** The error code of a Redis error reply ("WRONGTYPE", "LOADING"…), from the protocol. */
function replyCode(error: Error): string {
  return error.message.split(' ', 1)[0] ?? '';
}

/**
 * Maps what ioredis rejected with to a typed Keepsake error. A reply error is the server's
 * answer (the command ran, or was refused as a whole); anything else is the connection:
 * lost before the reply, timed out or never made. Then the outcome of a write is unknown,
 * which the message says: the error is retryable, and a retry of a conditional save that
 * did land meets its own revision as a conflict, never a silent double write.
 */
export function toKeepsakeError(error: unknown, operation: string): KeepsakeError {
  // Already typed (a durability error, a validation error raised by this adapter).
  if (KeepsakeError.isInstance(error)) return error;
  if (error instanceof ReplyError) {
    const code = replyCode(error as Error);
    if (code === 'UNBLOCKED') {
      // C3: WAIT or WAITAOF cut short because the server was demoted (a failover) while it
      // waited for its replicas: the write before it ran on the old master, and whether the
      // new one has it is unknown. Retryable as a lost connection is: a retried conditional
      // save that did land meets its own revision as a conflict, never a double write.
      return new BackendUnavailableError(
        ADAPTER_NAME,
        `${operation}: ${(error as Error).message} (the server was demoted while confirming the write: it may or may not have been applied)`,
        { cause: error },
      );
    }
    if (UNAVAILABLE_REPLY_CODES.has(code)) {
      return new BackendUnavailableError(
        ADAPTER_NAME,
        `${operation}: ${(error as Error).message}`,
        {
          cause: error,
        },
      );
    }
    return new BackendError(ADAPTER_NAME, operation, { cause: error });
  }
  const message = error instanceof Error ? error.message : String(error);
  return new BackendUnavailableError(
    ADAPTER_NAME,
    `${operation}: ${message} (the connection failed before a reply; a write may or may not have been applied)`,
    { cause: error },
  );
}
