import { KeepsakeError } from '@keepsake/core';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisClusterProcesses } from '../src/testing/index.js';
import {
  isSubsequence,
  messageIds,
  openStore,
  uniquePrefix,
  userMessage,
} from './helpers/stores.js';

/**
 * B1, B4 on Redis Cluster: the adapter's connections to every master are killed from the
 * server side (CLIENT KILL) while a store saves sessions spread over the masters. Failures
 * are typed and retryable, no write is stored twice or in part, and the adapter goes on
 * once ioredis has connected again.
 */
let cluster: RedisClusterProcesses;
beforeAll(async () => {
  cluster = await RedisClusterProcesses.start({ masters: 3 });
});
afterAll(async () => {
  await cluster.dispose();
});

describe('Redis Cluster connections killed', () => {
  it('B1, B4: typed errors, whole writes only, and recovery after CLIENT KILL on every master', async () => {
    const keyPrefix = uniquePrefix('cluster-faults');
    const options = {
      clusterNodes: cluster.seeds,
      keyPrefix,
      socketTimeoutMs: 2_000,
      durabilityTimeoutMs: 1_000,
    };
    const { store, close } = openStore(options);
    const ids = Array.from({ length: 6 }, (_, index) => `kill-${index}`);
    for (const id of ids) await store.create({ id }, { fsync: true });
    const acknowledged = new Map(ids.map((id) => [id, [] as string[]]));
    let failures = 0;
    let stop = false;
    const writers = ids.map(async (id) => {
      let session = await store.load(id);
      for (let index = 0; !stop; index++) {
        const message = userMessage(`${id}-${index}`);
        session.messages.push(message);
        try {
          await store.save(session, { fsync: true });
          acknowledged.get(id)!.push(message.id);
        } catch (error) {
          expect(KeepsakeError.isInstance(error), String(error)).toBe(true);
          expect((error as KeepsakeError).isRetryable).toBe(true);
          failures++;
          for (let attempt = 0; ; attempt++) {
            try {
              session = await store.reload(id);
              break;
            } catch (reloadError) {
              expect((reloadError as KeepsakeError).isRetryable).toBe(true);
              if (attempt > 200) throw reloadError;
              await new Promise((resolve) => setTimeout(resolve, 10));
            }
          }
        }
      }
    });
    const admins = cluster.nodes.map((node) => new Redis(node.url));
    for (let kill = 0; kill < 5; kill++) {
      await new Promise((resolve) => setTimeout(resolve, 40));
      // Every normal client but the admin connection itself.
      await Promise.all(
        admins.map((admin) => admin.call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes')),
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
    stop = true;
    await Promise.all(writers);
    for (const admin of admins) admin.disconnect();
    await close();

    expect(failures).toBeGreaterThan(0);
    const reader = openStore({ clusterNodes: cluster.seeds, keyPrefix });
    for (const id of ids) {
      const stored = messageIds(await reader.store.load(id));
      expect(new Set(stored).size, `${id}: nothing twice`).toBe(stored.length);
      expect(isSubsequence(acknowledged.get(id)!, stored), `${id}: every acknowledged save`).toBe(
        true,
      );
    }
    await reader.close();
  });
});
