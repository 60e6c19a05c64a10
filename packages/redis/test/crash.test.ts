import { KeepsakeError } from '@keepsake/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisServerProcess } from '../src/testing/index.js';
import {
  isSubsequence,
  messageIds,
  openStore,
  uniquePrefix,
  userMessage,
} from './helpers/stores.js';

/**
 * B3, C3, E2 against a real server crash: redis-server (AOF, appendfsync always) is
 * SIGKILLed while stores write, then started again from its AOF. Every save acknowledged
 * as durable (`fsync: true`) and every journal append acknowledged with `each` durability
 * must be there after the restart; what was in flight may or may not be, but nothing is
 * ever torn, duplicated or reordered. Each cycle kills the server after a few milliseconds
 * of writing, at a different moment.
 */
const KILLS = 110;
const SESSIONS = 4;
const RUN_ID = 'run-1';

let server: RedisServerProcess;

beforeAll(async () => {
  server = await RedisServerProcess.start({ persistence: 'aof-always' });
});
afterAll(async () => {
  await server.dispose();
});

/** A failure caused by the kill: typed, retryable, never a plain Error. */
function expectRetryable(error: unknown): void {
  expect(KeepsakeError.isInstance(error), String(error)).toBe(true);
  expect((error as KeepsakeError).code).toBe('backend_unavailable');
  expect((error as KeepsakeError).isRetryable).toBe(true);
}

describe('redis-server SIGKILLed during a write loop', () => {
  it(`B3, C3, E2: ${KILLS} kills lose no save or append acknowledged as durable`, async () => {
    const keyPrefix = uniquePrefix('crash');
    const options = { url: server.url, keyPrefix, connectTimeoutMs: 5_000 };
    const sessionIds = Array.from({ length: SESSIONS }, (_, index) => `crash-${index}`);
    /** Message ids acknowledged as durable, per session, in save order. */
    const acknowledged = new Map(sessionIds.map((id) => [id, [] as string[]]));
    /** Highest journal sequence acknowledged, per session. */
    const appended = new Map(sessionIds.map((id) => [id, 0]));
    const setup = openStore(options);
    for (const id of sessionIds) await setup.store.create({ id }, { fsync: true });
    await setup.close();

    let savesAcknowledged = 0;
    let appendsAcknowledged = 0;
    let failures = 0;
    const started = performance.now();
    for (let cycle = 0; cycle < KILLS; cycle++) {
      const { store, adapter, close } = openStore(options);
      // 1. Everything acknowledged before the last kill is there, once, in order.
      for (const id of sessionIds) {
        const stored = messageIds(await store.load(id));
        expect(new Set(stored).size, `${id}: no duplicate`).toBe(stored.length);
        expect(isSubsequence(acknowledged.get(id)!, stored), `${id} after kill ${cycle}`).toBe(
          true,
        );
        // What landed without its reply is on disk too: from now on it is the baseline.
        acknowledged.set(id, stored);
        const journal = await adapter.readLog(id, RUN_ID, { afterSequence: 0, limit: 100_000 });
        const sequences = journal.records.map((record) => record.sequence);
        expect(sequences, `${id}: journal contiguous`).toEqual(
          sequences.map((_, index) => index + 1),
        );
        expect(sequences.length).toBeGreaterThanOrEqual(appended.get(id)!);
        appended.set(id, sequences.length);
      }
      // 2. Write until the server dies under the writers.
      let killed = false;
      const saveLoop = async (id: string) => {
        const session = await store.load(id);
        for (let index = 0; !killed || index === 0; index++) {
          const message = userMessage(`${id}-${cycle}-${index}`);
          session.messages.push(message);
          try {
            await store.save(session, { fsync: true });
          } catch (error) {
            expectRetryable(error);
            failures++;
            return;
          }
          acknowledged.get(id)!.push(message.id);
          savesAcknowledged++;
        }
      };
      const appendLoop = async (id: string) => {
        for (;;) {
          const sequence = appended.get(id)! + 1;
          try {
            const result = await adapter.appendLog(
              id,
              RUN_ID,
              [{ sequence, text: JSON.stringify({ sequence, cycle }) }],
              { durability: 'each' },
            );
            expect(result).toEqual({ ok: true });
          } catch (error) {
            expectRetryable(error);
            failures++;
            return;
          }
          appended.set(id, sequence);
          appendsAcknowledged++;
        }
      };
      const writers = sessionIds.flatMap((id) => [saveLoop(id), appendLoop(id)]);
      const killAfterMs = 2 + ((cycle * 7) % 23);
      await new Promise((resolve) => setTimeout(resolve, killAfterMs));
      killed = true;
      await server.kill();
      await Promise.all(writers);
      await close();
      await server.start();
    }
    const perKillMs = (performance.now() - started) / KILLS;
    console.info(
      `crash: ${KILLS} kills, ${savesAcknowledged} durable saves and ${appendsAcknowledged} appends acknowledged, ${failures} writes cut off, ${perKillMs.toFixed(0)} ms per kill cycle`,
    );
    expect(savesAcknowledged).toBeGreaterThan(KILLS);
    expect(appendsAcknowledged).toBeGreaterThan(KILLS);
  }, 600_000);
});
