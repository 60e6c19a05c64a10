import type { RedisBackendSpec } from './backend-url.js';
import { BackendUnreachableError, PermissionDeniedError } from './cli-errors.js';

/** Socket errors that mean nothing answers at that address. */
const UNREACHABLE_ERRNOS = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ECONNRESET',
]);
const PERMISSION_REPLIES = new Set(['NOAUTH', 'WRONGPASS', 'NOPERM']);

/**
 * One connection attempt and a PING, without reconnecting, before the adapter opens. The
 * adapter keeps reconnecting until its timeout and then reports "no connection", which is
 * right for a server but tells an operator nothing: was the port wrong, or the password?
 * ioredis reports the real cause as an `error` event, so this check listens for it.
 */
export async function checkRedisAnswers(spec: RedisBackendSpec): Promise<void> {
  const { Redis } = await import('ioredis');
  const client = new Redis(spec.connectionUrl, {
    lazyConnect: true,
    retryStrategy: () => null,
    maxRetriesPerRequest: 0,
    enableReadyCheck: false,
    enableOfflineQueue: false,
    connectTimeout: spec.connectTimeoutMs,
    commandTimeout: spec.connectTimeoutMs,
  });
  let lastError: unknown = null;
  client.on('error', (error: unknown) => {
    lastError = error;
  });
  try {
    await client.connect();
    await client.ping();
  } catch (error) {
    throw describeFailure(spec, lastError ?? error);
  } finally {
    client.disconnect();
  }
}

function describeFailure(spec: RedisBackendSpec, error: unknown): Error {
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown } | null)?.code;
  // The protocol's error code is the first word of an error reply.
  const replyCode = message.split(' ', 1)[0] ?? '';
  if (PERMISSION_REPLIES.has(replyCode)) {
    return new PermissionDeniedError(
      spec.display,
      `${message} (give the password in the URL: redis://user:password@host:port)`,
      { cause: error },
    );
  }
  if (typeof code === 'string' && UNREACHABLE_ERRNOS.has(code)) {
    return new BackendUnreachableError(spec.display, `${code}: ${message}`, { cause: error });
  }
  return new BackendUnreachableError(
    spec.display,
    `no usable answer within ${spec.connectTimeoutMs} ms (${message}); is it a Redis server? (?connectTimeoutMs= raises the wait)`,
    { cause: error },
  );
}
