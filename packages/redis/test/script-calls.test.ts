import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisServerProcess } from '../src/testing/index.js';
import { messageIds, openStore, uniquePrefix, userMessage } from './helpers/stores.js';

/**
 * How the adapter sends its scripts outside pipelines (scripts/script-call.ts): the body
 * (EVAL) the first time on a connection, then the SHA (EVALSHA); after a NOSCRIPT reply the
 * body again, so a server that lost its scripts (SCRIPT FLUSH, a restart) never fails a
 * save, and a script refused with NOSCRIPT never ran, so nothing is written twice.
 */
let server: RedisServerProcess;
let observer: Redis;

beforeAll(async () => {
  server = await RedisServerProcess.start({ persistence: 'aof-always' });
  observer = new Redis(server.url, { lazyConnect: true });
  await observer.connect();
});
afterAll(async () => {
  observer.disconnect();
  await server.dispose();
});

/** Calls of EVAL and EVALSHA so far, and NOSCRIPT replies, from the server's statistics. */
async function scriptStatistics(): Promise<{ eval: number; evalsha: number; noscript: number }> {
  const commands = await observer.info('commandstats');
  const errors = await observer.info('errorstats');
  const calls = (name: string) =>
    Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(commands)?.[1] ?? 0);
  return {
    eval: calls('eval'),
    evalsha: calls('evalsha'),
    noscript: Number(/errorstat_NOSCRIPT:count=(\d+)/.exec(errors)?.[1] ?? 0),
  };
}

async function resetStatistics(): Promise<void> {
  await observer.config('RESETSTAT');
}

describe('script calls', () => {
  it('B4: a new connection runs a script with its body once, then by its SHA', async () => {
    await resetStatistics();
    const { store, close } = openStore({
      url: server.url,
      keyPrefix: uniquePrefix('eval'),
      connections: 1,
    });
    try {
      const session = await store.create({ id: 'first' }, { fsync: true });
      for (let index = 0; index < 20; index++) {
        session.messages.push(userMessage(`m${index}`));
        await store.save(session, { fsync: true });
      }
      const statistics = await scriptStatistics();
      expect(statistics.noscript).toBe(0);
      // One EVAL per script the connection used (a write, an index entry, a few at start-up);
      // every later call by SHA.
      expect(statistics.eval).toBeGreaterThan(0);
      expect(statistics.eval).toBeLessThanOrEqual(6);
      expect(statistics.evalsha).toBeGreaterThanOrEqual(20 * 2 - statistics.eval);
    } finally {
      await close();
    }
  });

  it('B4: after SCRIPT FLUSH, saves of 10 sessions at once still land, each exactly once (NOSCRIPT, then the body)', async () => {
    const keyPrefix = uniquePrefix('flush');
    const { store, close } = openStore({ url: server.url, keyPrefix, connections: 2 });
    const { store: reader, close: closeReader } = openStore({ url: server.url, keyPrefix });
    try {
      const sessions = await Promise.all(
        Array.from({ length: 10 }, (_, index) =>
          store.create({ id: `s${index}` }, { fsync: true }),
        ),
      );
      const saveAll = (round: number) =>
        Promise.all(
          sessions.map(async (session) => {
            session.messages.push(userMessage(`${session.id}-r${round}`));
            await store.save(session, { fsync: true });
          }),
        );
      await saveAll(0);
      await resetStatistics();
      await observer.script('FLUSH');
      await saveAll(1);
      await saveAll(2);
      // The flush was met (else this test would prove nothing) and got over.
      expect((await scriptStatistics()).noscript).toBeGreaterThan(0);
      for (const session of sessions) {
        const stored = await reader.load(session.id);
        expect(messageIds(stored)).toEqual([0, 1, 2].map((round) => `${session.id}-r${round}`));
        expect(stored.revision).toBe(4);
      }
      const listed = await reader.list({ limit: 20 });
      expect(listed.sessions.map((summary) => summary.messageCount)).toEqual(
        Array.from({ length: 10 }, () => 3),
      );
    } finally {
      await close();
      await closeReader();
    }
  });

  it('B4: after a server restart, the new connection sends each script with its body: no NOSCRIPT', async () => {
    const keyPrefix = uniquePrefix('restart');
    const { store, adapter, close } = openStore({ url: server.url, keyPrefix, connections: 1 });
    try {
      const session = await store.create({ id: 'restarted' }, { fsync: true });
      session.messages.push(userMessage('before'));
      await store.save(session, { fsync: true });
      await server.crashAndRestart();
      await adapter.whenConnected();
      await observer.ping();
      session.messages.push(userMessage('after'));
      await store.save(session, { fsync: true });
      expect((await scriptStatistics()).noscript).toBe(0);
      expect(messageIds(await store.reload(session.id))).toEqual(['before', 'after']);
    } finally {
      await close();
    }
  });
});
