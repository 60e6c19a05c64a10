import { KeepsakeError } from '@keepsake/core';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeyLayout, type RedisAdapter } from '../src/index.js';
import type { Lane } from '../src/storage-context.js';
import { RedisServerProcess } from '../src/testing/index.js';
import { openStore, uniquePrefix, userMessage } from './helpers/stores.js';

/**
 * B3, B7 on the WAITAOF plan: what `planDurability` picks for Redis ≥ 7.2 without
 * `appendfsync always` (durability-plan.test.ts covers the choice itself). This machine runs
 * Redis 7.0, which has no WAITAOF: the adapter opens on an `always` server and its lanes are
 * then put on the `waitaof` plan, so the server refuses the WAITAOF it is sent. That refusal
 * shows what the plan sends: a durable save's write and its index entry in one pipeline,
 * followed by WAITAOF (the index entry is not left to the turn's shared call, which no
 * WAITAOF follows), and a save whose confirmation fails is not acknowledged.
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

function onWaitAofPlan(adapter: RedisAdapter): void {
  for (const lane of (adapter as unknown as { lanes: readonly Lane[] }).lanes) {
    lane.scripts.durability = { ...lane.scripts.durability, method: 'waitaof' };
    // A save's write goes alone (its reply is its confirmation) only where no WAITAOF follows.
    expect(lane.scripts.sendsAlone(true)).toBe(false);
    expect(lane.scripts.groupsWrites(true)).toBe(false);
    expect(lane.scripts.sendsAlone(false)).toBe(true);
  }
}

async function unknownCommandErrors(): Promise<number> {
  const errors = await observer.info('errorstats');
  return Number(/errorstat_ERR:count=(\d+)/.exec(errors)?.[1] ?? 0);
}

describe('the WAITAOF plan (Redis ≥ 7.2 without appendfsync always)', () => {
  it('B3, B7: a durable save sends its write and index entry, then WAITAOF, in one pipeline; an unconfirmed save is not acknowledged', async () => {
    const keyPrefix = uniquePrefix('waitaof');
    const { store, adapter, close } = openStore({ url: server.url, keyPrefix, connections: 1 });
    try {
      const session = await store.create({ title: 'waitaof' }, { fsync: true });
      onWaitAofPlan(adapter);
      await observer.config('RESETSTAT');

      session.messages.push(userMessage('m1'));
      const failed = await store.save(session, { fsync: true }).then(
        () => null,
        (error: unknown) => error,
      );
      // The server refused WAITAOF (7.0 does not know it): the save is not acknowledged.
      expect(KeepsakeError.isInstance(failed), String(failed)).toBe(true);
      expect(String((failed as Error).message)).toMatch(/WAITAOF/i);
      expect(await unknownCommandErrors()).toBe(1);

      // What preceded WAITAOF in the pipeline ran: the document's write and its index entry.
      const keys = new KeyLayout(keyPrefix);
      const stored = await observer.get(keys.document('sessions', session.id).document);
      expect(stored).toContain('"m1"');
      const entry = await observer.hget(keys.index(), session.id);
      expect(entry).toContain('"messageCount":1');

      // A save that is not durable is confirmed by its reply, without WAITAOF.
      session.messages.push(userMessage('m2'));
      await store.save(session);
      expect(await unknownCommandErrors()).toBe(1);
      expect(await observer.hget(keys.index(), session.id)).toContain('"messageCount":2');
    } finally {
      await close();
    }
  });
});
