import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeyLayout, redisAdapter } from '../src/index.js';
import { RedisServerProcess } from '../src/testing/index.js';
import { uniquePrefix } from './helpers/stores.js';

/** B7: the index is never half written, and a missing one is never patched into a partial one. */
let server: RedisServerProcess;
beforeAll(async () => {
  server = await RedisServerProcess.start({ persistence: 'aof-always' });
});
afterAll(async () => {
  await server.dispose();
});

const summary = (id: string, updatedAt: number) => ({
  id,
  title: id,
  createdAt: 1,
  updatedAt,
  messageCount: 0,
  pending: false,
  parentId: null,
  rotatedTo: null,
});
const full = { kind: 'full' as const, revision: 1, text: '{}' };

describe('session index', () => {
  it('B7: a new namespace starts with an empty index; a removed one stays missing until rebuilt', async () => {
    const keyPrefix = uniquePrefix('index');
    const adapter = redisAdapter({ url: server.url, keyPrefix });
    await adapter.open();
    expect(await adapter.listIndex({ cursor: null, limit: 10 })).toEqual({
      status: 'ok',
      entries: [],
      nextCursor: null,
    });
    await adapter.putDocument('sessions', 'a', full, {
      expectedRevision: null,
      durable: true,
      indexEntry: summary('a', 5),
    });
    // The index is removed out of band: a put or a delete must not make a partial one.
    const raw = new Redis(server.url);
    await raw.del(new KeyLayout(keyPrefix).index());
    await adapter.putIndexEntry(summary('b', 7), { durable: true });
    await adapter.putDocument('sessions', 'c', full, {
      expectedRevision: null,
      durable: true,
      indexEntry: summary('c', 9),
    });
    await adapter.deleteIndexEntry('a', { durable: true });
    expect(await adapter.listIndex({ cursor: null, limit: 10 })).toEqual({ status: 'missing' });
    // A namespace with sessions does not start an empty index on open either.
    const reopened = redisAdapter({ url: server.url, keyPrefix });
    await reopened.open();
    expect(await reopened.listIndex({ cursor: null, limit: 10 })).toEqual({ status: 'missing' });
    await reopened.replaceIndex([summary('a', 5), summary('c', 9)], { durable: true });
    const pages: string[][] = [];
    let cursor: string | null = null;
    do {
      const page = await reopened.listIndex({ cursor, limit: 1 });
      if (page.status !== 'ok') throw new Error(page.status);
      pages.push(page.entries.map((entry) => (entry as { id: string }).id));
      cursor = page.nextCursor;
    } while (cursor !== null);
    expect(pages).toEqual([['c'], ['a']]);
    raw.disconnect();
    await adapter.close();
    await reopened.close();
  });

  it('B7: saves sent in one event-loop turn share one index write; a refused save writes no entry', async () => {
    const keyPrefix = uniquePrefix('index-turn');
    const adapter = redisAdapter({ url: server.url, keyPrefix });
    await adapter.open();
    const ids = Array.from({ length: 200 }, (_, index) => `s${index}`);
    const created = await Promise.all(
      ids.map((id) =>
        adapter.putDocument('sessions', id, full, {
          expectedRevision: null,
          durable: true,
          indexEntry: summary(id, 10),
        }),
      ),
    );
    expect(created.every((result) => result.ok && result.indexFailure === undefined)).toBe(true);
    const delta = (revision: number) => ({ kind: 'delta' as const, revision, text: '{"d":1}' });
    // All in one turn (more than one grouped call's worth): a refused write (wrong expected
    // revision), then the same session twice in order, whose later entry must be the one kept.
    const results = await Promise.all([
      adapter.putDocument('sessions', 's0', delta(2), {
        expectedRevision: 7,
        durable: true,
        indexEntry: summary('s0', 99),
      }),
      ...ids.slice(1).map((id) =>
        adapter.putDocument('sessions', id, delta(2), {
          expectedRevision: 1,
          durable: true,
          indexEntry: summary(id, 20),
        }),
      ),
      adapter.putDocument('sessions', 's1', delta(3), {
        expectedRevision: 2,
        durable: true,
        indexEntry: summary('s1', 30),
      }),
    ]);
    expect(results[0]).toEqual({ ok: false, currentRevision: 1 });
    expect(results.slice(1).every((result) => result.ok)).toBe(true);
    const page = await adapter.listIndex({ cursor: null, limit: 500 });
    if (page.status !== 'ok') throw new Error(page.status);
    const updatedAt = new Map(
      page.entries.map((entry) => [
        (entry as { id: string }).id,
        (entry as { updatedAt: number }).updatedAt,
      ]),
    );
    expect(updatedAt.size).toBe(ids.length);
    expect(updatedAt.get('s0')).toBe(10);
    expect(updatedAt.get('s1')).toBe(30);
    expect(ids.slice(2).every((id) => updatedAt.get(id) === 20)).toBe(true);
    await adapter.close();
  });
});
