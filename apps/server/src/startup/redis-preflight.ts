import { Redis } from 'ioredis';
import { sentinelAddresses } from '../backends/redis-backend.js';
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
  if (config.mode === 'sentinel') return checkSentinels(config, timeoutMs);
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

/**
 * Sentinel mode: asks the sentinels, one at a time, which primary serves the URL's group
 * (`SENTINEL get-master-addr-by-name`), so an unreachable sentinel list, a refused
 * sentinel password or a group no sentinel monitors is reported naming its variable. The
 * primary itself is then probed by the adapter when it opens.
 */
async function checkSentinels(config: RedisBackendConfig, timeoutMs: number): Promise<void> {
  const name = new URL(config.url).hostname;
  const failures: string[] = [];
  for (const sentinel of sentinelAddresses(config.sentinels ?? '')) {
    const client = new Redis({
      host: sentinel.host,
      port: sentinel.port,
      ...(config.sentinelPassword === undefined ? {} : { password: config.sentinelPassword }),
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
    try {
      await client.connect();
      const primary = await client.call('SENTINEL', 'get-master-addr-by-name', name);
      if (primary === null) {
        throw new StartupError(
          `KEEPSAKE_REDIS_URL=${maskUrl(config.url)} names the Sentinel group '${name}', which the sentinel at ${sentinel.host}:${sentinel.port} does not monitor. Put the group name of \`sentinel monitor <name> …\` in the URL's host: redis://[user:password@]<name>.`,
        );
      }
      return;
    } catch (error) {
      if (error instanceof StartupError) throw error;
      const cause = lastError ?? error;
      const message = cause instanceof Error ? cause.message : String(cause);
      const reply = message.split(' ', 1)[0] ?? '';
      if (REFUSED_CREDENTIALS.has(reply)) {
        throw new StartupError(
          `KEEPSAKE_REDIS_SENTINELS=${config.sentinels}: the sentinel at ${sentinel.host}:${sentinel.port} refused the credentials (${message}). Set KEEPSAKE_REDIS_SENTINEL_PASSWORD to the sentinels' requirepass.`,
          { cause },
        );
      }
      failures.push(`${sentinel.host}:${sentinel.port} (${message})`);
    } finally {
      client.disconnect();
    }
  }
  throw new StartupError(
    `KEEPSAKE_REDIS_SENTINELS=${config.sentinels}: no sentinel answers: ${failures.join('; ')}. Check the host:port list and that redis-sentinel runs there.`,
  );
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
