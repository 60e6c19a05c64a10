import { createHash } from 'node:crypto';
import {
  createMessage,
  createSessionStore,
  ReadOnlyError,
  type StorageAdapter,
} from '@keepsake/core';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeyLayout, redisAdapter } from '../src/index.js';
import { RedisServerProcess } from '../src/testing/index.js';
import { uniquePrefix } from './helpers/stores.js';

let server: RedisServerProcess;
let client: Redis;
beforeAll(async () => {
  server = await RedisServerProcess.start({ persistence: 'aof-always' });
  client = new Redis(server.url);
});
afterAll(async () => {
  client.disconnect();
  await server.dispose();
});

/** Every key of the namespace with its DUMP (type, value, encoding) and its TTL. */
async function keyspace(prefix: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, found] = await client.scan(cursor, 'MATCH', `*${prefix}*`, 'COUNT', 1000);
    keys.push(...found);
    cursor = next;
  } while (cursor !== '0');
  const lines: string[] = [];
  for (const key of [...new Set(keys)].sort()) {
    const dump = await client.dumpBuffer(key);
    const digest = dump === null ? 'gone' : createHash('sha256').update(dump).digest('hex');
    lines.push(`${key} ${digest} ${await client.pttl(key)}`);
  }
  return lines;
}

/** A crashed run (a pending turn and an open journal), a torn document and no index. */
async function damagedNamespace(keyPrefix: string): Promise<void> {
  const store = createSessionStore({
    adapter: redisAdapter({ url: server.url, keyPrefix }),
  });
  for (const id of ['alpha', 'torn']) {
    const session = await store.create({ id, title: id });
    session.messages.push(createMessage({ role: 'user', content: `hello ${id}` }));
    await store.save(session);
  }
  await store.create({ id: 'crashed', title: 'died mid-answer' });
  const run = await store.beginRun('crashed', { userMessage: { role: 'user', content: 'q' } });
  await run.append({ type: 'token', data: { text: 'partial answer' } });
  // Neither complete() nor cancel(): what a process killed mid-answer leaves behind.
  await store.close();
  const adapter = redisAdapter({ url: server.url, keyPrefix });
  await adapter.open();
  const torn = (await adapter.getDocument('sessions', 'torn'))!;
  await adapter.putDocument(
    'sessions',
    'torn',
    { kind: 'full', revision: torn.revision + 1, text: '{"messages": 5' },
    { expectedRevision: torn.revision, durable: true },
  );
  await adapter.close();
  await client.del(new KeyLayout(keyPrefix).index());
}

describe('redisAdapter({ readOnly: true })', () => {
  it('opens, reads and repairs in memory only: the keyspace is the same key for key, DUMP for DUMP', async () => {
    const keyPrefix = uniquePrefix('read-only');
    await damagedNamespace(keyPrefix);
    const before = await keyspace(keyPrefix);
    expect(before.length).toBeGreaterThan(0);
    // durability 'aof' is not probed: a read-only open needs none.
    const adapter = redisAdapter({ url: server.url, keyPrefix, readOnly: true });
    const store = createSessionStore({ adapter, readOnly: true, recovery: { graceMs: 0 } });
    const listed = await store.list();
    expect(listed.sessions.map((session) => session.id).sort()).toEqual(['alpha', 'crashed']);
    const crashed = await store.load('crashed');
    expect(crashed.pending).toBeNull();
    expect(crashed.messages.map((message) => message.content)).toContain('partial answer');
    await expect(store.load('torn')).rejects.toThrow(/does not parse|corrupt/i);
    for (const runId of await store.listRuns('crashed')) {
      await store.readJournal('crashed', runId);
    }
    expect(await adapter.listIndex({ cursor: null, limit: 10 })).toEqual({ status: 'missing' });
    await store.close();
    expect(await keyspace(keyPrefix)).toEqual(before);
  });

  it('refuses every write with ReadOnlyError, and sends none', async () => {
    const keyPrefix = uniquePrefix('read-only-writes');
    await damagedNamespace(keyPrefix);
    const before = await keyspace(keyPrefix);
    const adapter: StorageAdapter = redisAdapter({ url: server.url, keyPrefix, readOnly: true });
    await adapter.open();
    const summary = {
      id: 'alpha',
      title: 'x',
      createdAt: 1,
      updatedAt: 1,
      messageCount: 0,
      pending: false,
      parentId: null,
      rotatedTo: null,
    };
    const writes: Array<() => Promise<unknown>> = [
      () =>
        adapter.putDocument(
          'sessions',
          'new',
          { kind: 'full', revision: 1, text: '{}' },
          { expectedRevision: null, durable: true },
        ),
      () => adapter.deleteDocument('sessions', 'alpha', { durable: true }),
      () => adapter.quarantineDocument('sessions', 'torn', 'test'),
      () => adapter.putIndexEntry(summary, { durable: true }),
      () => adapter.deleteIndexEntry('alpha', { durable: true }),
      () => adapter.replaceIndex([summary], { durable: true }),
      () => adapter.appendLog('s', 'r', [{ sequence: 1, text: '{}' }], { durability: 'each' }),
      () => adapter.deleteLogs('crashed', { durable: true }),
      () => adapter.deleteLog('crashed', 'r', { durable: true }),
    ];
    for (const write of writes) {
      const error = await write().then(
        () => null,
        (reason: unknown) => reason,
      );
      expect(ReadOnlyError.isInstance(error), String(error)).toBe(true);
    }
    await adapter.sync();
    await adapter.close();
    expect(await keyspace(keyPrefix)).toEqual(before);
    // A namespace with nothing in it is left without even an empty index.
    const empty = uniquePrefix('read-only-empty');
    const fresh = redisAdapter({ url: server.url, keyPrefix: empty, readOnly: true });
    await fresh.open();
    expect(await fresh.listIndex({ cursor: null, limit: 10 })).toEqual({ status: 'missing' });
    await fresh.close();
    expect(await keyspace(empty)).toEqual([]);
  });
});
