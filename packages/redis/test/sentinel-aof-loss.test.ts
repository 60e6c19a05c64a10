import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RedisAdapterOptions } from '../src/index.js';
import { RedisSentinelDeployment } from '../src/testing/index.js';
import { checkHistory, FailoverWriter, randomBetween } from './helpers/failover.js';
import { uniquePrefix } from './helpers/stores.js';

/**
 * B3, measured: `durability: 'aof'` on a replicated deployment (a primary with AOF and
 * `appendfsync always`, 2 replicas, 3 sentinels). Its acknowledgement waits for the
 * primary's fsync, not for a replica, so a failover after a SIGKILL can lose acknowledged
 * writes: this test counts how many, over FAILOVERS kills at random points of the same
 * write loop as sentinel-failover.test.ts, and reports it (the README's durability table
 * quotes it). What must hold whatever was lost: no message is stored twice and every
 * journal is 1…n without a gap, and the writer goes on after each failover.
 */
const FAILOVERS = 5;
const SESSIONS = 4;

let deployment: RedisSentinelDeployment;
beforeAll(async () => {
  deployment = await RedisSentinelDeployment.start({ replicas: 2, sentinels: 3 });
});
afterAll(async () => {
  await deployment?.dispose();
});

describe("durability 'aof' through Sentinel failovers", () => {
  it(`B3: measures the acknowledged writes ${FAILOVERS} failovers lose when acknowledgements do not wait for replicas`, async () => {
    const base: RedisAdapterOptions = {
      sentinels: deployment.sentinelAddresses,
      name: deployment.name,
      keyPrefix: uniquePrefix('sentinel-aof-loss'),
      connectTimeoutMs: 10_000,
      socketTimeoutMs: 2_000,
      durabilityTimeoutMs: 1_000,
    };
    const writer = new FailoverWriter({ ...base, durability: 'aof' }, SESSIONS);
    const reader = { options: { ...base, durability: 'none' as const, connections: 1 } };
    const lostPerFailover: number[] = [];
    let lostSoFar = 0;
    try {
      await writer.untilAcknowledged(SESSIONS * 2);
      for (let failover = 1; failover <= FAILOVERS; failover++) {
        await writer.untilAcknowledged(randomBetween(1, 40));
        await deployment.failover();
        await writer.untilAcknowledged(SESSIONS * 2);
        const result = await checkHistory(reader, writer.snapshot());
        // Losses are measured, not refused; a duplicate or a gap inside a journal is refused.
        const corrupt = result.problems.filter(
          (problem) => problem.includes('stored twice') || problem.includes('is not 1…n'),
        );
        expect(corrupt).toEqual([]);
        const lost = result.lostSaves + result.lostAppends;
        lostPerFailover.push(lost - lostSoFar);
        lostSoFar = lost;
      }
      await writer.stop();
    } finally {
      writer.kill();
    }
    expect(writer.violations.filter((line) => line.startsWith('untyped'))).toEqual([]);
    expect(lostPerFailover).toHaveLength(FAILOVERS);
    console.info(
      `durability 'aof' through Sentinel: ${writer.acknowledged} writes acknowledged, ` +
        `${lostSoFar} of them lost by ${FAILOVERS} failovers (per failover: ${lostPerFailover.join(', ')})`,
    );
  }, 180_000);
});
