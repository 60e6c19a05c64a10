import { BackendUnavailableError } from '@keepsake/core';
import { Cluster, type ClusterNode, type ClusterOptions, Redis, type RedisOptions } from 'ioredis';
import { ADAPTER_NAME } from './errors.js';
import type { ResolvedRedisAdapterOptions } from './options.js';

export type RedisClient = Redis | Cluster;

/**
 * The options that decide what happens to a command when its connection is lost. They are
 * the adapter's, whatever `redisOptions` says:
 * - `autoResendUnfulfilledCommands: false`: a command written to a connection that then
 *   broke is never sent again on the next one (it may have run already);
 * - `maxRetriesPerRequest: 0`: such a command fails at once with a retryable error, and so
 *   do commands queued while the client reconnects if that attempt fails (a queued command
 *   was never written, so sending it once the connection is back is safe);
 * - `socketTimeout`: a connection silent for that long after a command is destroyed, so a
 *   black hole fails the commands in flight instead of hanging them.
 */
function connectionSafety(options: ResolvedRedisAdapterOptions): RedisOptions {
  return {
    lazyConnect: true,
    enableOfflineQueue: true,
    autoResendUnfulfilledCommands: false,
    maxRetriesPerRequest: 0,
    socketTimeout: options.socketTimeoutMs,
    connectTimeout: options.connectTimeoutMs,
  };
}

/** Reconnect soon, then every second at most: the server may be restarting. */
function reconnectDelay(attempt: number): number {
  return Math.min(50 * attempt, 1_000);
}

/**
 * Makes the clients the options ask for (`connections` of them for a `url`, one `Cluster`
 * for `clusterNodes`), or adopts the one they pass. `owned` says whether the adapter closes
 * them.
 */
export function createClients(
  options: ResolvedRedisAdapterOptions,
  connectionName: string | null,
): {
  clients: RedisClient[];
  owned: boolean;
} {
  const { connection } = options;
  if (connection.kind === 'client') return { clients: [connection.client], owned: false };
  const clients: RedisClient[] = [];
  for (let index = 0; index < options.connections; index++) {
    clients.push(createOwnedClient(options, connectionName));
  }
  return { clients, owned: true };
}

function createOwnedClient(
  options: ResolvedRedisAdapterOptions,
  connectionName: string | null,
): RedisClient {
  const { connection } = options;
  // The owner's name on every connection it makes, on every node, after every reconnect
  // (CLIENT SETNAME by ioredis): what owner liveness looks for (owner-liveness.ts).
  const safety = {
    ...connectionSafety(options),
    ...(connectionName === null ? {} : { connectionName }),
  };
  let client: RedisClient;
  if (connection.kind === 'sentinel') {
    const { kind: _kind, ...sentinel } = connection;
    client = new Redis({
      retryStrategy: reconnectDelay,
      sentinelRetryStrategy: reconnectDelay,
      ...options.redisOptions,
      ...sentinel,
      // ioredis checks the server's role (INFO) before a connection is ready: a demoted
      // primary is never written to.
      role: 'master',
      ...safety,
      // No offline queue: a command is only ever written to a connection that is ready, so
      // nothing queued during a failover reaches the new primary before the adapter has
      // probed its durability (primary-check.ts); it fails at once, retryable, instead.
      enableOfflineQueue: false,
    } satisfies RedisOptions as never);
  } else if (connection.kind === 'url') {
    client = new Redis(connection.url, {
      retryStrategy: reconnectDelay,
      ...options.redisOptions,
      ...safety,
      // ioredis 6's option types do not accept `undefined` under exactOptionalPropertyTypes.
    } satisfies RedisOptions as never);
  } else {
    client = new Cluster((connection as { nodes: ClusterNode[] }).nodes, {
      clusterRetryStrategy: reconnectDelay,
      ...options.clusterOptions,
      lazyConnect: true,
      enableOfflineQueue: true,
      // A node's lost connection fails its commands in flight instead of sending them again
      // after the failover delay (they may have run). MOVED, ASK, TRYAGAIN and CLUSTERDOWN
      // replies are still followed: those commands did not run.
      retryDelayOnFailover: 0,
      redisOptions: { ...options.redisOptions, ...safety, lazyConnect: true },
    } satisfies ClusterOptions as never);
  }
  // Connection errors reach callers as typed errors of the commands they fail; without a
  // listener ioredis would print each one.
  client.on('error', () => undefined);
  return client;
}

/**
 * Resolves once the client is ready for commands: connects a lazy client, waits out a
 * reconnection in progress, and fails with a retryable error after `timeoutMs`.
 */
export async function untilReady(client: RedisClient, timeoutMs: number): Promise<void> {
  if (client.status === 'ready') return;
  if (client.status === 'end') {
    throw new BackendUnavailableError(ADAPTER_NAME, 'the connection was closed');
  }
  await new Promise<void>((resolve, reject) => {
    // The last connection error seen while waiting: the reason the timeout gives (a refused
    // port, a wrong password, a TLS mismatch), with the error itself as its cause.
    let lastError: Error | undefined;
    const onError = (error: Error) => {
      lastError = error;
    };
    const cleanup = () => {
      clearTimeout(timer);
      client.off('ready', onReady);
      client.off('end', onEnd);
      client.off('error', onError);
    };
    const onReady = () => {
      cleanup();
      resolve();
    };
    const onEnd = () => {
      cleanup();
      reject(
        new BackendUnavailableError(
          ADAPTER_NAME,
          `the connection was closed${lastError ? ` (last error: ${lastError.message})` : ''}`,
          lastError ? { cause: lastError } : {},
        ),
      );
    };
    const timer = setTimeout(() => {
      cleanup();
      reject(
        new BackendUnavailableError(
          ADAPTER_NAME,
          `no connection to the server within ${timeoutMs} ms (status: ${client.status}${
            lastError ? `; last error: ${lastError.message}` : ''
          })`,
          lastError ? { cause: lastError } : {},
        ),
      );
    }, timeoutMs);
    client.on('ready', onReady);
    client.on('end', onEnd);
    client.on('error', onError);
    if (client.status === 'wait') {
      // The promise only says how this attempt went; 'ready' and the timer decide.
      client.connect().catch(() => undefined);
    }
  });
}

/** The masters, each with its own connection: the client itself when standalone. */
export function masters(client: RedisClient): Redis[] {
  // `isCluster`, not instanceof: an adopted client may come from another copy of ioredis.
  return client.isCluster ? (client as Cluster).nodes('master') : [client as Redis];
}
