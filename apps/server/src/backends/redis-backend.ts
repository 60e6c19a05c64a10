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
  if (config.mode === 'cluster') {
    const seed = new URL(config.url);
    return redisAdapter({
      ...common,
      clusterNodes: [{ host: seed.hostname, port: Number(seed.port || 6379) }],
      ...(seed.password === ''
        ? {}
        : {
            redisOptions: {
              password: decodeURIComponent(seed.password),
              ...(seed.username === '' ? {} : { username: decodeURIComponent(seed.username) }),
            },
          }),
    });
  }
  return redisAdapter({ ...common, url: config.url });
}

/** The adapter's connection options, for the startup banner (no password). */
export function describeRedisBackend(config: RedisBackendConfig): string {
  const url = new URL(config.url);
  return `redis ${config.mode} at ${url.host}, keys under ${config.keyPrefix}:<namespace>:, durability ${config.durability}`;
}
