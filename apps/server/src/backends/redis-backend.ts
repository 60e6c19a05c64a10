import type { StorageAdapter } from '@keepsake/core';
import { type RedisAdapterOptions, redisAdapter } from '@keepsake/redis';
import type { BackendConfig } from '../config/config-schema.js';

type RedisBackendConfig = Extract<BackendConfig, { kind: 'redis' }>;

/**
 * The Redis adapter of one token namespace: its own key prefix `<keyPrefix>:<namespace>`
 * and its own connection. The durability level is probed when the adapter opens, so a
 * server that cannot confirm it fails before the first request is served.
 */
export function redisBackendAdapter(config: RedisBackendConfig, namespace: string): StorageAdapter {
  const keyPrefix = `${config.keyPrefix}:${namespace}`;
  const common: Omit<RedisAdapterOptions, 'url' | 'clusterNodes'> = {
    keyPrefix,
    durability: config.durability,
    replicas: config.replicas,
  };
  const seed = new URL(config.url);
  const credentials =
    seed.password === ''
      ? {}
      : {
          redisOptions: {
            password: decodeURIComponent(seed.password),
            ...(seed.username === '' ? {} : { username: decodeURIComponent(seed.username) }),
          },
        };
  if (config.mode === 'cluster') {
    return redisAdapter({
      ...common,
      clusterNodes: [{ host: seed.hostname, port: Number(seed.port || 6379) }],
      ...credentials,
    });
  }
  if (config.mode === 'sentinel') {
    // redis://[user:password@]<master group name>: the sentinels name its primary.
    return redisAdapter({
      ...common,
      sentinels: sentinelAddresses(config.sentinels ?? ''),
      name: seed.hostname,
      ...(config.sentinelPassword === undefined
        ? {}
        : { sentinelPassword: config.sentinelPassword }),
      ...credentials,
    });
  }
  return redisAdapter({ ...common, url: config.url });
}

/** `host:port,host:port` (validated by the config schema) as addresses. */
export function sentinelAddresses(list: string): Array<{ host: string; port: number }> {
  return list.split(',').map((entry) => {
    const separator = entry.lastIndexOf(':');
    return { host: entry.slice(0, separator), port: Number(entry.slice(separator + 1)) };
  });
}

/** The adapter's connection options, for the startup banner (no password). */
export function describeRedisBackend(config: RedisBackendConfig): string {
  const url = new URL(config.url);
  if (config.mode === 'sentinel') {
    return `redis sentinel group ${url.hostname} via ${config.sentinels}, keys under ${config.keyPrefix}:<namespace>:, durability ${config.durability}`;
  }
  return `redis ${config.mode} at ${url.host}, keys under ${config.keyPrefix}:<namespace>:, durability ${config.durability}`;
}
