import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { openRedisAdapter, RedisDurabilityError, type redisAdapter } from '../src/index.js';
import { RedisServerProcess } from '../src/testing/index.js';
import { uniquePrefix } from './helpers/stores.js';

/**
 * B3: the durability level is probed at `open()` on real servers; a server that cannot
 * confirm it fails there, with a RedisDurabilityError naming what to change, never later.
 */
const servers: RedisServerProcess[] = [];
async function server(options: Parameters<typeof RedisServerProcess.start>[0]) {
  const started = await RedisServerProcess.start(options);
  servers.push(started);
  return started;
}
afterAll(async () => {
  await Promise.all(servers.map((each) => each.dispose()));
});

async function openFails(
  options: Parameters<typeof redisAdapter>[0],
): Promise<RedisDurabilityError> {
  const error = await openRedisAdapter(options).then(
    () => null,
    (caught: unknown) => caught,
  );
  expect(RedisDurabilityError.is(error), String(error)).toBe(true);
  return error as RedisDurabilityError;
}

describe('durability probed at open()', () => {
  it("B3: 'aof' on a server with appendfsync always confirms each write by its reply", async () => {
    const always = await server({ persistence: 'aof-always' });
    const adapter = await openRedisAdapter({ url: always.url, keyPrefix: uniquePrefix('aof') });
    expect(await adapter.durabilityReport()).toEqual({
      level: 'aof',
      method: 'reply',
      servers: [`127.0.0.1:${always.port}`],
      warnings: [],
    });
    expect(adapter.capabilities.durability).toBe('server-fsync');
    await adapter.close();
  });

  it("B3: 'aof' is refused at open() by a server without AOF, and by one that fsyncs every second (Redis 7.0 has no WAITAOF)", async () => {
    const none = await server({ persistence: 'none' });
    const noAof = await openFails({ url: none.url });
    expect(noAof.level).toBe('aof');
    expect(noAof.message).toContain('appendonly no');
    const everysec = await server({ persistence: 'aof-everysec' });
    const lazy = await openFails({ url: everysec.url });
    expect(lazy.message).toContain('appendfsync everysec');
    expect(lazy.message).toContain('WAITAOF');
    // The same servers are fine for what they can promise.
    const relaxed = await openRedisAdapter({ url: none.url, durability: 'none' });
    expect(relaxed.capabilities.durability).toBe('acknowledged');
    expect(relaxed.capabilities.gaps.map((gap) => gap.clause)).toEqual(['B3']);
    await relaxed.close();
  });

  it("B3: where CONFIG is refused, 'aof' reads INFO persistence, and cannot confirm appendfsync on 7.0", async () => {
    const locked = await server({
      persistence: 'aof-always',
      args: ['--rename-command', 'CONFIG', ''],
    });
    const error = await openFails({ url: locked.url });
    expect(error.message).toContain('appendfsync cannot be read (CONFIG is refused)');
  });

  it("B3: 'replicas' waits for WAIT, is refused without enough replicas, and fails a write a replica did not acknowledge", async () => {
    // No 5 s wait before the first sync's transfer starts.
    const primary = await server({
      persistence: 'aof-always',
      args: ['--repl-diskless-sync-delay', '0'],
    });
    const refused = await openFails({ url: primary.url, durability: 'replicas', replicas: 1 });
    expect(refused.message).toContain('has 0');
    const replica = await server({
      persistence: 'none',
      args: ['--replicaof', primary.host, String(primary.port)],
    });
    const keyPrefix = uniquePrefix('replicas');
    let adapter = null;
    for (let attempt = 0; adapter === null; attempt++) {
      // The replica takes a moment to connect; until then the probe refuses.
      adapter = await openRedisAdapter({
        url: primary.url,
        durability: 'replicas',
        keyPrefix,
        durabilityTimeoutMs: 1_500,
        socketTimeoutMs: 4_000,
      }).catch((error: unknown) => {
        if (!RedisDurabilityError.is(error) || attempt > 200) throw error;
        return new Promise<null>((resolve) => setTimeout(() => resolve(null), 25));
      });
    }
    expect((await adapter.durabilityReport()).method).toBe('wait');
    expect((await adapter.durabilityReport()).warnings).toEqual([]);
    // 'aof' on the same primary: its acknowledgements do not wait for the replica (B3), said
    // at open as a report warning and a process warning.
    const aof = await openRedisAdapter({ url: primary.url, keyPrefix, livenessConfirmMs: 0 });
    expect((await aof.durabilityReport()).warnings).toEqual([
      expect.stringContaining('without waiting for a replica'),
    ]);
    await aof.close();
    // Connected is not yet in sync: wait until the replica acknowledges what it receives
    // (its first sync done and its first REPLCONF ACK sent).
    const primaryClient = new Redis(primary.url);
    while (Number(await primaryClient.call('WAIT', 1, 100)) < 1) {
      await primaryClient.set('keepsake-test-sync', '1');
    }
    primaryClient.disconnect();
    expect(adapter.capabilities.durability).toBe('replicated');
    const write = (revision: number) => ({
      kind: 'full' as const,
      revision,
      text: `{"r":${revision}}`,
    });
    expect(
      await adapter.putDocument('sessions', 'a', write(1), {
        expectedRevision: null,
        durable: true,
      }),
    ).toEqual({ ok: true });
    // The replica goes away: WAIT counts 0 of 1 and the durable write fails, typed and retryable.
    await replica.kill();
    const error = await adapter
      .putDocument('sessions', 'a', write(2), { expectedRevision: 1, durable: true })
      .then(
        () => null,
        (caught: unknown) => caught,
      );
    expect(RedisDurabilityError.is(error), String(error)).toBe(true);
    expect((error as RedisDurabilityError).isRetryable).toBe(true);
    // A write that does not ask for durability does not wait.
    expect(
      await adapter.putDocument('sessions', 'b', write(1), {
        expectedRevision: null,
        durable: false,
      }),
    ).toEqual({ ok: true });
    await adapter.close();
  });
});
