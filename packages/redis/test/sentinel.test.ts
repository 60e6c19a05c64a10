import { once } from 'node:events';
import type { KeepsakeError } from '@keepsake/core';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AOF_NOT_REPLICATED_WARNING,
  type RedisAdapterOptions,
  RedisDurabilityError,
  redisAdapter,
} from '../src/index.js';
import { RedisSentinelDeployment } from '../src/testing/index.js';
import { openStore, uniquePrefix, userMessage } from './helpers/stores.js';

/**
 * B3 through Sentinel (a primary, a replica, 3 sentinels on loopback ports): the adapter
 * finds the primary by name, warns at open that `aof` acknowledgements do not wait for
 * replicas, and re-probes a primary its connections reach after a failover: one weaker than
 * the configured level refuses writes, typed, until it is fixed.
 */
let deployment: RedisSentinelDeployment;
beforeAll(async () => {
  deployment = await RedisSentinelDeployment.start({ replicas: 1, sentinels: 3 });
});
afterAll(async () => {
  await deployment?.dispose();
});

function options(extra: Partial<RedisAdapterOptions> = {}): RedisAdapterOptions {
  return {
    sentinels: deployment.sentinelAddresses,
    name: deployment.name,
    keyPrefix: uniquePrefix('sentinel'),
    socketTimeoutMs: 2_000,
    durabilityTimeoutMs: 1_000,
    ...extra,
  } as RedisAdapterOptions;
}

describe('Redis through Sentinel', () => {
  it("B3: durability 'aof' warns at open that acknowledgements do not wait for replicas", async () => {
    const warned = once(process, 'warning');
    const adapter = redisAdapter(options({ durability: 'aof' }));
    try {
      const report = await adapter.durabilityReport();
      const primary = await deployment.primary();
      expect(report.servers).toEqual([`127.0.0.1:${primary.port}`]);
      expect(report.warnings).toHaveLength(1);
      expect(report.warnings[0]).toContain("durability: 'replicas'");
      const [warning] = (await warned) as [Error & { code?: string }];
      expect(warning.code).toBe(AOF_NOT_REPLICATED_WARNING);
    } finally {
      await adapter.close();
    }
    const replicated = redisAdapter(options({ durability: 'replicas' }));
    try {
      expect((await replicated.durabilityReport()).warnings).toEqual([]);
    } finally {
      await replicated.close();
    }
  });

  it('B3: an ioredis client the application made with sentinels is adopted, its primary probed', async () => {
    const client = new Redis({
      sentinels: deployment.sentinelAddresses,
      name: deployment.name,
      lazyConnect: true,
    });
    client.on('error', () => undefined);
    const adapter = redisAdapter({ client, keyPrefix: uniquePrefix('sentinel-client') });
    try {
      const report = await adapter.durabilityReport();
      expect(report.method).toBe('reply');
      await client.set(`${uniquePrefix('probe')}`, '1');
    } finally {
      await adapter.close();
      client.disconnect();
    }
  });

  it("B3: after a failover to a primary without the AOF, 'aof' writes are refused (typed) until it has one", async () => {
    const settings = options({ durability: 'aof', livenessConfirmMs: 0 });
    const { store, adapter, close } = openStore(settings);
    try {
      await store.create({ id: 'weaker' }, { fsync: true });
      // The replica that will be promoted keeps no AOF.
      const primary = await deployment.primary();
      const replica = deployment.servers.find((server) => server !== primary)!;
      await command(replica, ['CONFIG', 'SET', 'appendonly', 'no']);
      const { promoted } = await deployment.failover();
      expect(promoted).toBe(replica);

      const session = await store.load('weaker');
      session.messages.push(userMessage('refused'));
      const refused = await store.save(session, { fsync: true }).then(
        () => null,
        (error: unknown) => error,
      );
      expect(RedisDurabilityError.is(refused), String(refused)).toBe(true);
      expect((refused as RedisDurabilityError).server).toBe(`127.0.0.1:${promoted.port}`);
      expect((refused as KeepsakeError).isRetryable).toBe(true);
      expect((refused as Error).message).toContain('appendonly no');
      // Refused before it was sent: nothing of it is stored.
      const fresh = openStore({ ...settings, durability: 'none' });
      expect((await fresh.store.load('weaker')).messages).toEqual([]);
      await fresh.close();

      // The operator turns the AOF on: the next write probes again and goes through.
      await command(promoted, ['CONFIG', 'SET', 'appendonly', 'yes']);
      await untilAofOn(promoted);
      const reloaded = await store.reload('weaker');
      reloaded.messages.push(userMessage('accepted'));
      await store.save(reloaded, { fsync: true });
      expect((await adapter.durabilityReport()).level).toBe('aof');
    } finally {
      await close();
    }
  }, 60_000);
});

async function command(target: { host: string; port: number }, args: string[]): Promise<unknown> {
  const client = new Redis({ host: target.host, port: target.port, lazyConnect: true });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return await client.call(args[0]!, ...args.slice(1));
  } finally {
    client.disconnect();
  }
}

/** CONFIG SET appendonly yes starts an AOF rewrite; INFO says when the AOF is on. */
async function untilAofOn(target: { host: string; port: number }): Promise<void> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const info = String(await command(target, ['INFO', 'persistence']));
    if (/aof_enabled:1/.test(info) && /aof_rewrite_in_progress:0/.test(info)) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error('the AOF never came on');
}
