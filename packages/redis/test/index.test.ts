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
});
