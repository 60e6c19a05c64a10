import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisAdapterOptions, redisAdapter } from '../src/index.js';
import { RedisSentinelDeployment } from '../src/testing/index.js';
import { checkHistory, FailoverWriter, randomBetween } from './helpers/failover.js';
import { uniquePrefix } from './helpers/stores.js';

/**
 * B3, C1, C3, E2, F1 through Sentinel: a primary, 2 replicas and 3 sentinels, all real
 * processes on loopback ports. Another process (fixtures/failover-writer.ts) loops durable
 * saves and `each` journal appends on 4 sessions with `durability: 'replicas'` (replicas: 1)
 * while the primary is SIGKILLed FAILOVERS times, each after a random number of further
 * acknowledged writes; Sentinel promotes a replica and the killed server comes back as a
 * replica of it. After each failover: every acknowledged save and append is stored, once,
 * in order; the writer's owner name is on the new primary's client list (owner liveness
 * follows the failover); every write that failed in flight failed typed and retryable.
 */
const FAILOVERS = 20;
const SESSIONS = 4;

let deployment: RedisSentinelDeployment;
beforeAll(async () => {
  deployment = await RedisSentinelDeployment.start({
    replicas: 2,
    sentinels: 3,
    persistence: 'none',
  });
});
afterAll(async () => {
  await deployment?.dispose();
});

describe('Sentinel failover under a durable write loop', () => {
  it(`B3, C3, E2: ${FAILOVERS} SIGKILLs of the primary lose no save or append acknowledged with durability 'replicas'`, async () => {
    const base: RedisAdapterOptions = {
      sentinels: deployment.sentinelAddresses,
      name: deployment.name,
      keyPrefix: uniquePrefix('sentinel-failover'),
      connectTimeoutMs: 10_000,
      socketTimeoutMs: 2_000,
      durabilityTimeoutMs: 1_000,
    };
    const writer = new FailoverWriter({ ...base, durability: 'replicas', replicas: 1 }, SESSIONS);
    const reader = { options: { ...base, durability: 'none' as const, connections: 1 } };
    const points: number[] = [];
    const seconds: number[] = [];
    try {
      await writer.untilAcknowledged(SESSIONS * 2);
      for (let failover = 1; failover <= FAILOVERS; failover++) {
        // A random point in the loop: after 1 to 40 more acknowledged writes.
        const point = randomBetween(1, 40);
        points.push(point);
        await writer.untilAcknowledged(point);
        const started = performance.now();
        const { killed, promoted } = await deployment.failover();
        seconds.push((performance.now() - started) / 1_000);
        console.info(
          `failover ${failover}: ${seconds.at(-1)!.toFixed(1)} s, ${writer.acknowledged} acknowledged`,
        );
        expect(promoted).not.toBe(killed);
        // The writer goes on against the new primary.
        await writer.untilAcknowledged(SESSIONS * 2);
        const history = writer.snapshot();
        const result = await checkHistory(reader, history);
        expect(result.problems, `failover ${failover} (kill points ${points.join(',')})`).toEqual(
          [],
        );
        expect(writer.violations).toEqual([]);
        await expectOwnerAlive(reader.options, writer.ownerId!);
      }
      await writer.stop();
    } finally {
      writer.kill();
    }
    // Writes were in flight at the kills, and each failed typed and retryable.
    expect(writer.failures.length).toBeGreaterThan(0);
    expect(writer.failures.filter((failure) => !failure.retryable)).toEqual([]);
    expect(writer.violations).toEqual([]);
    console.info(
      `sentinel failover: ${FAILOVERS} kills at ${points.join(',')} acknowledged writes; ` +
        `${writer.acknowledged} acknowledged, ${writer.failures.length} failed writes (all retryable), 0 lost; ` +
        `kill to healthy deployment: ${seconds.map((each) => each.toFixed(1)).join(', ')} s`,
    );
  }, 300_000);
});

/** F1, E9: an owner whose connections followed the failover is alive on the new primary. */
async function expectOwnerAlive(options: RedisAdapterOptions, ownerId: string): Promise<void> {
  const adapter = redisAdapter(options);
  try {
    await adapter.open();
    expect(await adapter.liveness!.ownerState(ownerId)).toBe('alive');
  } finally {
    await adapter.close();
  }
}
