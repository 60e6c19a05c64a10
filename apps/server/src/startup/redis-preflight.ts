import { Redis } from 'ioredis';
import type { BackendConfig } from '../config/config-schema.js';
import { maskUrl, StartupError } from './startup-error.js';

type RedisBackendConfig = Extract<BackendConfig, { kind: 'redis' }>;

/** Socket errors that mean nothing answers at that address. */
const UNREACHABLE = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ECONNRESET',
]);
const REFUSED_CREDENTIALS = new Set(['NOAUTH', 'WRONGPASS', 'NOPERM']);

/**
 * One connection, no reconnecting, before any adapter opens: the adapters keep reconnecting
 * until their timeout and then say "no connection", which tells an operator neither which
 * setting is wrong nor how. This asks the server once (`INFO cluster`) and turns what it
 * finds (nothing answers, credentials refused, a cluster node in standalone mode or the
 * reverse) into a StartupError naming the variable to change, within `timeoutMs`.
 */
export async function checkRedisBeforeOpening(
  config: RedisBackendConfig,
  timeoutMs: number,
): Promise<void> {
  const shown = maskUrl(config.url);
  const client = new Redis(config.url, {
    lazyConnect: true,
    retryStrategy: () => null,
    maxRetriesPerRequest: 0,
    enableReadyCheck: false,
    enableOfflineQueue: false,
    connectTimeout: timeoutMs,
    commandTimeout: timeoutMs,
  });
  let lastError: unknown = null;
  client.on('error', (error: unknown) => {
    lastError = error;
  });
  let info: string;
  try {
    await client.connect();
    info = await client.info('cluster');
  } catch (error) {
    throw describeFailure(shown, lastError ?? error, timeoutMs);
  } finally {
    client.disconnect();
  }
  const clusterEnabled = /^cluster_enabled:1\s*$/m.test(info);
  if (config.mode === 'cluster' && !clusterEnabled) {
    throw new StartupError(
      `KEEPSAKE_REDIS_MODE (backend.mode) is 'cluster', but KEEPSAKE_REDIS_URL=${shown} is a standalone Redis server (cluster_enabled:0). Set KEEPSAKE_REDIS_MODE=standalone, or point KEEPSAKE_REDIS_URL at a node of the cluster.`,
    );
  }
  if (config.mode === 'standalone' && clusterEnabled) {
    throw new StartupError(
      `KEEPSAKE_REDIS_URL=${shown} is a node of a Redis Cluster, but KEEPSAKE_REDIS_MODE (backend.mode) is 'standalone': most keys would be answered with MOVED. Set KEEPSAKE_REDIS_MODE=cluster (any node's URL will do as the seed).`,
    );
  }
}

function describeFailure(shown: string, error: unknown, timeoutMs: number): StartupError {
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown } | null)?.code;
  // The protocol's error code is the first word of an error reply.
  const reply = message.split(' ', 1)[0] ?? '';
  if (REFUSED_CREDENTIALS.has(reply)) {
    return new StartupError(
      `KEEPSAKE_REDIS_URL=${shown}: the server refused the credentials (${message}). Put the right user and password in the URL: redis://user:password@host:port.`,
      { cause: error },
    );
  }
  if (typeof code === 'string' && UNREACHABLE.has(code)) {
    return new StartupError(
      `KEEPSAKE_REDIS_URL=${shown}: nothing answers there (${code}). Check the host and port, and that redis-server runs and accepts connections from this host.`,
      { cause: error },
    );
  }
  return new StartupError(
    `KEEPSAKE_REDIS_URL=${shown}: no usable answer within ${timeoutMs} ms (${message}). Is it a Redis server, and is the scheme right (rediss:// for TLS)?`,
    { cause: error },
  );
}
