import { randomBytes } from 'node:crypto';
import type { StorageAdapter } from '@keepsake/core';
import { redisAdapter } from '@keepsake/redis';
import {
  containerEngineAvailable,
  type RedisTarget,
  startRedisTarget,
} from '@keepsake/redis/testing';

/**
 * The Redis a test file uses: KEEPSAKE_TEST_REDIS_URL when set, else one the harness of
 * @keepsake/redis starts on a free loopback port (stopped by its pid in `dispose()`).
 */
export function startRedis(): Promise<RedisTarget> {
  return startRedisTarget({ env: process.env, containerEngine: containerEngineAvailable() });
}

/** A key prefix no other test uses, so tests share one server without seeing each other. */
export function uniquePrefix(label: string): string {
  return `cli-test:${label}:${randomBytes(4).toString('hex')}`;
}

/** The store URL of a prefix on the server. */
export function redisStoreUrl(target: RedisTarget, prefix: string): string {
  return `${target.url}?prefix=${encodeURIComponent(prefix)}`;
}

export async function openRedis(target: RedisTarget, prefix: string): Promise<StorageAdapter> {
  const adapter = redisAdapter({ url: target.url, keyPrefix: prefix, durability: 'none' });
  await adapter.open();
  return adapter;
}
