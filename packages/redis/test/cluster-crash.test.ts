import { KeepsakeError } from '@keepsake/core';
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
 * B3, C3, E2 on Redis Cluster: every master (AOF, appendfsync always) is SIGKILLed while a
 * store writes sessions spread over the three of them, then restarted from its AOF. A
 * restarted master serves writes only after 2 s (Redis' CLUSTER_WRITABLE_DELAY), so this
 * runs a few kills; the standalone crash test (crash.test.ts) runs over a hundred.
 */
const KILLS = 3;
const SESSIONS = 6;

let cluster: RedisClusterProcesses;
beforeAll(async () => {
  cluster = await RedisClusterProcesses.start({ masters: 3 });
});
afterAll(async () => {
  await cluster.dispose();
});

describe('Redis Cluster masters SIGKILLed during a write loop', () => {
  it(`B3, C3, E2: ${KILLS} kills of every master lose no acknowledged save or append`, async () => {
    const keyPrefix = uniquePrefix('cluster-crash');
    const options = {
      clusterNodes: cluster.seeds,
      keyPrefix,
      connectTimeoutMs: 10_000,
      socketTimeoutMs: 1_000,
      durabilityTimeoutMs: 500,
    };
    const ids = Array.from({ length: SESSIONS }, (_, index) => `spread-${index}`);
    const acknowledged = new Map(ids.map((id) => [id, [] as string[]]));
    const appended = new Map(ids.map((id) => [id, 0]));
    const setup = openStore(options);
    for (const id of ids) await setup.store.create({ id }, { fsync: true });
    await setup.close();

    for (let kill = 0; kill <= KILLS; kill++) {
      const { store, adapter, close } = openStore(options);
      for (const id of ids) {
        const stored = messageIds(await store.load(id));
        expect(new Set(stored).size).toBe(stored.length);
        expect(isSubsequence(acknowledged.get(id)!, stored), `${id} after kill ${kill}`).toBe(true);
        acknowledged.set(id, stored);
        const journal = await adapter.readLog(id, 'run-1', { afterSequence: 0, limit: 100_000 });
        const sequences = journal.records.map((record) => record.sequence);
        expect(sequences).toEqual(sequences.map((_, index) => index + 1));
        expect(sequences.length).toBeGreaterThanOrEqual(appended.get(id)!);
        appended.set(id, sequences.length);
      }
      if (kill === KILLS) {
        await close();
        break;
      }
      let killed = false;
      const failed = (error: unknown) => {
        expect(KeepsakeError.isInstance(error), String(error)).toBe(true);
        expect((error as KeepsakeError).isRetryable).toBe(true);
      };
      const writers = ids.map(async (id) => {
        const session = await store.load(id);
        for (let index = 0; !killed || index === 0; index++) {
          const message = userMessage(`${id}-${kill}-${index}`);
          session.messages.push(message);
          try {
            await store.save(session, { fsync: true });
            acknowledged.get(id)!.push(message.id);
            const sequence = appended.get(id)! + 1;
            const result = await adapter.appendLog(id, 'run-1', [{ sequence, text: '{}' }], {
              durability: 'each',
            });
            expect(result).toEqual({ ok: true });
            appended.set(id, sequence);
          } catch (error) {
            failed(error);
            return;
          }
        }
      });
      await new Promise((resolve) => setTimeout(resolve, 20 + kill * 10));
      killed = true;
      await Promise.all(cluster.nodes.map((node) => node.kill()));
      await Promise.all(writers);
      await close();
      await Promise.all(cluster.nodes.map((node) => node.start()));
      await cluster.untilHealthy();
    }
  }, 120_000);
});
