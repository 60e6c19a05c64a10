import { RedisDurabilityError } from '@keepsake/redis';
import { RedisServerProcess } from '@keepsake/redis/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBackendAdapter, describeBackend } from '../src/backends/backend-factory.js';
import { configSchema } from '../src/config/config-schema.js';
import { loadConfig } from '../src/config/load-config.js';

/** KEEPSAKE_BACKEND=redis: configuration, one key prefix per namespace, durability probed. */
let withAof: RedisServerProcess;
let withoutAof: RedisServerProcess;
beforeAll(async () => {
  [withAof, withoutAof] = await Promise.all([
    RedisServerProcess.start({ persistence: 'aof-always' }),
    RedisServerProcess.start({ persistence: 'none' }),
  ]);
});
afterAll(async () => {
  await Promise.all([withAof.dispose(), withoutAof.dispose()]);
});

describe('the redis backend', () => {
  it('reads its settings from the environment, durability aof by default', () => {
    const config = loadConfig({
      env: {
        KEEPSAKE_BACKEND: 'redis',
        KEEPSAKE_REDIS_URL: 'redis://127.0.0.1:7000',
        KEEPSAKE_REDIS_MODE: 'cluster',
        KEEPSAKE_REDIS_REPLICAS: '2',
      },
    });
    expect(config.backend).toEqual({
      kind: 'redis',
      url: 'redis://127.0.0.1:7000',
      keyPrefix: 'keepsake',
      mode: 'cluster',
      durability: 'aof',
      replicas: 2,
    });
    expect(describeBackend(config.backend)).toContain('redis cluster at 127.0.0.1:7000');
    expect(() =>
      loadConfig({
        env: {
          KEEPSAKE_BACKEND: 'redis',
          KEEPSAKE_REDIS_URL: 'redis://a:1',
          KEEPSAKE_REDIS_DURABILITY: 'fsync',
        },
      }),
    ).toThrow(/KEEPSAKE_REDIS_DURABILITY/);
    expect(() =>
      loadConfig({
        env: {
          KEEPSAKE_BACKEND: 'redis',
          KEEPSAKE_REDIS_URL: 'redis://a:1',
          KEEPSAKE_REDIS_KEY_PREFIX: 'a{b}',
        },
      }),
    ).toThrow(/KEEPSAKE_REDIS_KEY_PREFIX/);
  });

  it('gives each namespace its own key prefix on one server', async () => {
    const config = configSchema.parse({
      backend: { kind: 'redis', url: withAof.url, keyPrefix: `factory-${process.pid}` },
    });
    const alice = createBackendAdapter(config.backend, 'alice');
    const bob = createBackendAdapter(config.backend, 'bob');
    expect(alice.name).toBe('redis');
    await alice.open();
    await bob.open();
    const write = { kind: 'full' as const, revision: 1, text: '{"x":1}' };
    await alice.putDocument('sessions', 's1', write, { expectedRevision: null, durable: true });
    expect(await alice.hasDocument('sessions', 's1')).toBe(true);
    expect(await bob.hasDocument('sessions', 's1')).toBe(false);
    await alice.close();
    await bob.close();
  });

  it('B3: a server that cannot confirm the configured durability fails when the adapter opens', async () => {
    const config = configSchema.parse({ backend: { kind: 'redis', url: withoutAof.url } });
    const adapter = createBackendAdapter(config.backend, 'alice');
    const error = await adapter.open().then(
      () => null,
      (caught: unknown) => caught,
    );
    expect(RedisDurabilityError.is(error), String(error)).toBe(true);
    expect((error as Error).message).toContain('appendonly no');
    await adapter.close();
    const relaxed = createBackendAdapter(
      configSchema.parse({ backend: { kind: 'redis', url: withoutAof.url, durability: 'none' } })
        .backend,
      'alice',
    );
    await relaxed.open();
    await relaxed.close();
  });
});
