import { KeepsakeError, type Session } from '@keepsake/core';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RedisClient } from '../src/connection.js';
import { laneChooser } from '../src/storage-context.js';
import { RedisServerProcess } from '../src/testing/index.js';
import {
  isSubsequence,
  messageIds,
  openStore,
  uniquePrefix,
  userMessage,
} from './helpers/stores.js';

/**
 * The adapter's `connections` to a standalone server: each session's commands stay on one
 * connection (so its saves, index entries and journal appends keep their order), a lost
 * connection fails only its own commands, typed, and comes back, and close() ends them all.
 */
let server: RedisServerProcess;

beforeAll(async () => {
  server = await RedisServerProcess.start({ persistence: 'aof-always' });
});
afterAll(async () => {
  await server.dispose();
});

/** The connection the adapter sends a session's commands on. */
function clientOf(clients: readonly RedisClient[], sessionId: string): RedisClient {
  const lanes = clients.map((client) => ({ client, scripts: null as never }));
  return laneChooser(lanes)(sessionId).client;
}

/** Bytes each connection of the adapter has written so far. */
function bytesWritten(clients: readonly unknown[]): number[] {
  return clients.map((client) => (client as Redis).stream?.bytesWritten ?? 0);
}

describe('several connections to one server', () => {
  it('B4, E2, B7: 40 sessions saved and journaled at once over 4 connections: every write lands, in order, on every connection', async () => {
    const keyPrefix = uniquePrefix('lanes');
    const { store, adapter, close } = openStore({ url: server.url, keyPrefix, connections: 4 });
    const ids = Array.from({ length: 40 }, (_, index) => `lane-${index}`);
    const sessions = await Promise.all(ids.map((id) => store.create({ id }, { fsync: true })));
    const before = bytesWritten(adapter.clients);
    await Promise.all(
      sessions.map(async (session) => {
        for (let index = 0; index < 10; index++) {
          session.messages.push(userMessage(`${session.id}-m${index}`));
          await store.save(session, { fsync: true });
        }
        const run = await store.beginRun(session.id, {
          userMessage: userMessage(`${session.id}-q`),
        });
        // Issued without waiting: the journal keeps them in the order they were issued.
        await Promise.all(
          Array.from({ length: 30 }, (_, index) =>
            run.append({ type: 'token', data: { text: `${index},` } }),
          ),
        );
        await run.complete();
      }),
    );
    const after = bytesWritten(adapter.clients);
    expect(after.every((bytes, index) => bytes > before[index]!)).toBe(true);
    await close();

    const reader = openStore({ url: server.url, keyPrefix, connections: 1 });
    for (const id of ids) {
      const loaded = await reader.store.load(id);
      const expected = [...Array.from({ length: 10 }, (_, index) => `${id}-m${index}`), `${id}-q`];
      expect(messageIds(loaded).slice(0, 11)).toEqual(expected);
      expect(loaded.messages.at(-1)?.content).toBe(
        Array.from({ length: 30 }, (_, index) => `${index},`).join(''),
      );
    }
    const listed = await reader.store.list({ limit: 100 });
    expect(listed.sessions.map((summary) => summary.id).sort()).toEqual([...ids].sort());
    await reader.close();
  });

  it('B1, B4: one connection lost mid-save fails only its own sessions, typed and retryable; they save again once it is back, nothing acknowledged is lost', async () => {
    const keyPrefix = uniquePrefix('lane-loss');
    const { store, adapter, close } = openStore({
      url: server.url,
      keyPrefix,
      connections: 4,
      socketTimeoutMs: 2_000,
      durabilityTimeoutMs: 1_000,
    });
    await adapter.open();
    const ids = Array.from({ length: 40 }, (_, index) => `loss-${index}`);
    const sessions = await Promise.all(ids.map((id) => store.create({ id }, { fsync: true })));
    const acknowledged = new Map<string, string[]>();
    const failures = new Map<string, unknown[]>();
    let lost = false;
    let savedAfterLoss = 0;
    const target = adapter.clients[1] as Redis;
    /** Sessions whose last save attempt failed: each must save again before it stops. */
    const failing = new Set<string>();
    const work = sessions.map(async (session: Session) => {
      for (let index = 0; savedAfterLoss < 400 || index < 20 || failing.has(session.id); index++) {
        session.messages.push(userMessage(`${session.id}-m${index}`));
        try {
          await store.save(session, { fsync: true });
          acknowledged.set(session.id, messageIds(session));
          failing.delete(session.id);
          if (lost) savedAfterLoss++;
        } catch (error) {
          failures.set(session.id, [...(failures.get(session.id) ?? []), error]);
          failing.add(session.id);
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      }
    });
    await new Promise((resolve) => setTimeout(resolve, 150));
    // FAULT INJECTION: the second connection's socket is destroyed under the saves in flight.
    target.stream.destroy();
    lost = true;
    await Promise.all(work);

    expect(failures.size).toBeGreaterThan(0);
    for (const [id, errors] of failures) {
      // Only sessions whose commands travel on the lost connection saw it.
      expect(clientOf(adapter.clients, id)).toBe(target);
      for (const error of errors) {
        expect(KeepsakeError.isInstance(error), String(error)).toBe(true);
        expect((error as KeepsakeError).code).toBe('backend_unavailable');
        expect((error as KeepsakeError).isRetryable).toBe(true);
      }
    }
    // Every session that failed saved again afterwards (its loop ran until it did).
    expect(failing.size).toBe(0);
    await close();

    const reader = openStore({ url: server.url, keyPrefix, connections: 1 });
    for (const id of ids) {
      const stored = messageIds(await reader.store.load(id));
      expect(isSubsequence(acknowledged.get(id) ?? [], stored), id).toBe(true);
    }
    await reader.close();
  });

  it('close() ends every connection, and a closed adapter refuses calls', async () => {
    const { adapter, store } = openStore({ url: server.url, keyPrefix: uniquePrefix('close') });
    await store.create({ id: 'closing' }, { fsync: true });
    expect(adapter.clients.map((client) => client.status)).toEqual([
      'ready',
      'ready',
      'ready',
      'ready',
    ]);
    await store.close();
    await adapter.close();
    expect(adapter.clients.map((client) => client.status)).toEqual(['end', 'end', 'end', 'end']);
    await expect(adapter.hasDocument('sessions', 'closing')).rejects.toThrow(/adapter closed/);
  });
});
