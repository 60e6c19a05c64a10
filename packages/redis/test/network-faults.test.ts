import { KeepsakeError } from '@keepsake/core';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisAdapter } from '../src/index.js';
import { RedisServerProcess } from '../src/testing/index.js';
import { FaultProxy } from './helpers/fault-proxy.js';
import {
  isSubsequence,
  messageIds,
  openStore,
  uniquePrefix,
  userMessage,
} from './helpers/stores.js';

/**
 * B1, B4, E2 through a FAULT-INJECTING TCP proxy (test/helpers/fault-proxy.ts) between the
 * adapter and a real redis-server: connections cut, black-holed, slowed down, and replies
 * lost after their command ran. Every failure must be a typed, retryable error; what is
 * stored is always one whole write or none (never part of one, never one twice); and the
 * adapter works again once the network does.
 */
let server: RedisServerProcess;
let proxy: FaultProxy;

beforeAll(async () => {
  server = await RedisServerProcess.start({ persistence: 'aof-always' });
  proxy = await FaultProxy.start(server);
});
afterAll(async () => {
  await proxy.close();
  await server.dispose();
});

/** Adapter options through the proxy, with timeouts short enough for a test. */
function throughProxy(keyPrefix: string) {
  return {
    url: proxy.url,
    keyPrefix,
    socketTimeoutMs: 500,
    durabilityTimeoutMs: 200,
    connectTimeoutMs: 500,
  };
}

function expectRetryable(error: unknown): void {
  expect(KeepsakeError.isInstance(error), String(error)).toBe(true);
  expect((error as KeepsakeError).code).toBe('backend_unavailable');
  expect((error as KeepsakeError).isRetryable).toBe(true);
}

/** Retries `call` while the network is down (a bounded number of times). */
async function whenBack<T>(call: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      expectRetryable(error);
      if (attempt >= 200) throw error;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }
}

/** A reader that bypasses the proxy: what the server holds. */
function directStore(keyPrefix: string) {
  return openStore({ url: server.url, keyPrefix });
}

describe('network faults between the adapter and redis-server', () => {
  it('B1, B4, E2: connections cut during saves and appends: typed errors, whole writes only, recovery after', async () => {
    const keyPrefix = uniquePrefix('cut');
    const { store, adapter, close } = openStore(throughProxy(keyPrefix));
    const ids = ['cut-0', 'cut-1', 'cut-2'];
    for (const id of ids) await store.create({ id }, { fsync: true });
    const acknowledged = new Map(ids.map((id) => [id, [] as string[]]));
    const appended = new Map(ids.map((id) => [id, 0]));
    let failures = 0;
    let stop = false;
    const connectionsBefore = proxy.connections;

    const saveLoop = async (id: string) => {
      let session = await store.load(id);
      for (let index = 0; !stop; index++) {
        const message = userMessage(`${id}-${index}`);
        session.messages.push(message);
        try {
          await store.save(session, { fsync: true });
          acknowledged.get(id)!.push(message.id);
        } catch (error) {
          expectRetryable(error);
          failures++;
          // The outcome is unknown: read what is stored once the network is back.
          session = await whenBack(() => store.reload(id));
        }
      }
    };
    const appendLoop = async (id: string) => {
      while (!stop) {
        const sequence = appended.get(id)! + 1;
        try {
          const result = await adapter.appendLog(
            id,
            'run-1',
            [{ sequence, text: `{"s":${sequence}}` }],
            {
              durability: 'each',
            },
          );
          if (result.ok) appended.set(id, sequence);
          // Refused: the previous append landed although its answer was lost.
          else appended.set(id, result.lastSequence);
        } catch (error) {
          expectRetryable(error);
          failures++;
        }
      }
    };
    const writers = ids.flatMap((id) => [saveLoop(id), appendLoop(id)]);
    for (let cut = 0; cut < 12; cut++) {
      await new Promise((resolve) => setTimeout(resolve, 15 + (cut % 4) * 5));
      proxy.cut();
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
    stop = true;
    await Promise.all(writers);
    await close();

    expect(failures).toBeGreaterThan(0);
    expect(proxy.connections - connectionsBefore).toBeGreaterThan(1);
    const reader = directStore(keyPrefix);
    for (const id of ids) {
      const stored = messageIds(await reader.store.load(id));
      expect(new Set(stored).size, `${id}: nothing twice`).toBe(stored.length);
      expect(isSubsequence(acknowledged.get(id)!, stored), `${id}: every acknowledged save`).toBe(
        true,
      );
      const journal = await reader.adapter.readLog(id, 'run-1', {
        afterSequence: 0,
        limit: 100_000,
      });
      const sequences = journal.records.map((record) => record.sequence);
      expect(sequences).toEqual(sequences.map((_, index) => index + 1));
      expect(sequences.length).toBeGreaterThanOrEqual(appended.get(id)!);
    }
    await reader.close();
  });

  it('B1: a black hole fails writes with a typed error after socketTimeoutMs, stores nothing partial, and heals', async () => {
    const keyPrefix = uniquePrefix('blackhole');
    const { store, adapter, close } = openStore(throughProxy(keyPrefix));
    const session = await store.create({ id: 'hole' }, { fsync: true });
    session.messages.push(userMessage('before'));
    await store.save(session, { fsync: true });

    proxy.blackhole();
    session.messages.push(userMessage('in-the-hole'));
    try {
      const failed = await Promise.allSettled([
        store.save(session, { fsync: true }),
        adapter.appendLog('hole', 'run-1', [{ sequence: 1, text: '{}' }], { durability: 'each' }),
      ]);
      for (const outcome of failed) {
        expect(outcome.status).toBe('rejected');
        expectRetryable((outcome as PromiseRejectedResult).reason);
      }
    } finally {
      proxy.heal();
    }
    // Nothing of the black-holed writes reached the server.
    const reader = directStore(keyPrefix);
    const stored = await reader.store.load('hole');
    expect(messageIds(stored)).toEqual(['before']);
    expect(
      (await reader.adapter.readLog('hole', 'run-1', { afterSequence: 0, limit: 10 })).exists,
    ).toBe(false);
    // The network is back: the same store goes on.
    await whenBack(() => store.reload('hole'));
    const live = await store.load('hole');
    live.messages.push(userMessage('after'));
    await store.save(live, { fsync: true });
    const after = await reader.store.reload('hole');
    expect(messageIds(after)).toEqual(['before', 'after']);
    await reader.close();
    await close();
  });

  it('latency: 25 ms each way slows every call down and changes no result', async () => {
    const keyPrefix = uniquePrefix('latency');
    const { store, close } = openStore(throughProxy(keyPrefix));
    proxy.setLatency(25);
    try {
      const session = await store.create({ id: 'slow', title: 'slow' }, { fsync: true });
      const run = await store.beginRun(session.id, { userMessage: userMessage('q') });
      await run.append({ type: 'token', data: { text: 'an answer' } });
      await run.complete();
      const listed = await store.list({ limit: 10 });
      expect(listed.sessions.map((entry) => entry.id)).toEqual(['slow']);
      expect((await store.reload('slow')).messages.map((message) => message.content)).toEqual([
        'q',
        'an answer',
      ]);
    } finally {
      proxy.setLatency(0);
    }
    await close();
  });

  it('B4, E2: a write whose reply was lost is stored once; a client that resends it gets the success it was', async () => {
    const keyPrefix = uniquePrefix('lost-reply');
    const reader = directStore(keyPrefix);
    const raw = await reader.adapter.durabilityReport().then(() => reader.adapter);
    const full = (revision: number, text: string) => ({ kind: 'full' as const, revision, text });

    // 1. The adapter's own connection never resends: a typed error, the write stored once.
    const own = redisAdapter(throughProxy(keyPrefix));
    await own.open();
    proxy.dropReplies(true);
    const lost = own.putDocument('sessions', 'a', full(1, '{"v":1}'), {
      expectedRevision: null,
      durable: true,
    });
    await until(async () => (await raw.getDocument('sessions', 'a')) !== null);
    proxy.dropReplies(false);
    proxy.cut();
    await expect(lost).rejects.toSatisfy((error: unknown) => {
      expectRetryable(error);
      return true;
    });
    expect(await raw.getDocument('sessions', 'a')).toEqual({
      revision: 1,
      base: '{"v":1}',
      deltas: [],
    });
    await own.close();

    // 2. A client that resends unanswered commands after a reconnect (ioredis' defaults,
    //    passed as `client`): the resent script recognises its own write.
    const resending = new Redis(proxy.url, { lazyConnect: true });
    resending.on('error', () => undefined);
    const adopted = redisAdapter({ client: resending, keyPrefix });
    await adopted.open();
    await adopted.putDocument('sessions', 'b', full(1, '{"v":1}'), {
      expectedRevision: null,
      durable: true,
    });
    proxy.dropReplies(true);
    const delta = adopted.putDocument(
      'sessions',
      'b',
      { kind: 'delta', revision: 2, text: '{"d":2}' },
      {
        expectedRevision: 1,
        durable: true,
      },
    );
    const append = adopted.appendLog(
      'b',
      'run-1',
      [
        { sequence: 1, text: '{"s":1}' },
        { sequence: 2, text: '{"s":2}' },
      ],
      {
        durability: 'each',
      },
    );
    await until(
      async () => (await raw.readLog('b', 'run-1', { afterSequence: 0, limit: 10 })).exists,
    );
    await until(async () => (await raw.getDocument('sessions', 'b'))?.revision === 2);
    proxy.dropReplies(false);
    proxy.cut();
    expect(await delta).toEqual({ ok: true });
    expect(await append).toEqual({ ok: true });
    expect(await raw.getDocument('sessions', 'b')).toEqual({
      revision: 2,
      base: '{"v":1}',
      deltas: ['{"d":2}'],
    });
    expect((await raw.readLog('b', 'run-1', { afterSequence: 0, limit: 10 })).records).toEqual([
      { sequence: 1, text: '{"s":1}' },
      { sequence: 2, text: '{"s":2}' },
    ]);
    await adopted.close();
    resending.disconnect();
    await reader.close();
  });
});

/** Polls `condition` (what the server holds, read around the proxy) until it holds. */
async function until(condition: () => Promise<boolean>): Promise<void> {
  for (let attempt = 0; attempt < 500; attempt++) {
    if (await condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error('condition never held');
}
