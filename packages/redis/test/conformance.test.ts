import { fileURLToPath } from 'node:url';
import { runConformance } from '@keepsake/conformance';
import type { StorageAdapter } from '@keepsake/core';
import { type RedisAdapter, redisAdapter } from '../src/index.js';
import {
  containerEngineAvailable,
  type RedisTarget,
  startRedisTarget,
} from '../src/testing/index.js';
import { type ChildTarget, conformanceKeyPrefix, TARGET_ENV } from './conformance-child.js';

/**
 * The whole suite on a standalone redis-server with AOF `appendfsync always`, started by
 * this file (or the server KEEPSAKE_TEST_REDIS_URL names). A namespace is a key prefix, so
 * a second adapter on the same namespace is a restart onto the same data. Each adapter
 * makes its own connection (the `url` path). `simulateCrash` SIGKILLs the server and
 * starts it again from its AOF: what was acknowledged as durable must be there.
 */
let target: RedisTarget;
const adapters = new Set<RedisAdapter>();

runConformance(
  {
    name: 'redis',
    // Real second processes (H1, E2's process kills) open the same server through this module.
    initializerModule: fileURLToPath(new URL('./conformance-child.ts', import.meta.url)),
    async setup() {
      target = await startRedisTarget({
        env: process.env,
        containerEngine: containerEngineAvailable(),
      });
      const child: ChildTarget = { url: target.url };
      process.env[TARGET_ENV] = JSON.stringify(child);
    },
    async teardown() {
      delete process.env[TARGET_ENV];
      for (const adapter of adapters) await adapter.close();
      await target.dispose();
    },
    async createAdapter(namespace) {
      const adapter = redisAdapter({ url: target.url, keyPrefix: conformanceKeyPrefix(namespace) });
      adapters.add(adapter);
      return adapter;
    },
    async destroyAdapter(adapter: StorageAdapter) {
      adapters.delete(adapter as RedisAdapter);
      await adapter.close();
    },
    async simulateCrash() {
      // Only a server this file started can be crashed; a shared one is left alone.
      const server = target.server;
      if (server === null) return;
      await server.crashAndRestart();
      // Adapters still open reconnect on their own; wait for that, so a test that goes on
      // with one of them does not race the reconnection.
      await Promise.all([...adapters].map((adapter) => adapter.whenConnected()));
    },
  },
  { testTimeoutMs: 30_000 },
);
