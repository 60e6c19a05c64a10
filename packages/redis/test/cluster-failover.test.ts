import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RedisAdapterOptions } from '../src/index.js';
import { RedisClusterProcesses } from '../src/testing/index.js';
import { checkHistory, FailoverWriter, randomBetween } from './helpers/failover.js';
import { uniquePrefix } from './helpers/stores.js';

/**
 * B3, C3, E2 on a Redis Cluster of 3 masters, each with a replica (real processes on
 * loopback ports). Another process (fixtures/failover-writer.ts) loops durable saves and
 * `each` journal appends on 6 sessions spread over the slots with `durability: 'replicas'`
 * (replicas: 1), while masters are failed over, each after a random number of further
 * acknowledged writes: SIGKILLed (the cluster promotes its replica after
 * cluster-node-timeout; the killed node comes back as a replica), and by `CLUSTER FAILOVER`
 * on a replica. After each: every acknowledged save and append is stored, once, in order;
 * every write that failed in flight failed typed and retryable.
 */
const ROUNDS = 5;
const SESSIONS = 6;

let cluster: RedisClusterProcesses;
beforeAll(async () => {
  cluster = await RedisClusterProcesses.start({
    masters: 3,
    replicas: 1,
    persistence: 'none',
    // Redis's default: a shorter one (2 s) lets a starved node look failed to its peers when
    // CI runs other suites beside this one, and failovers nobody asked for pile up.
    nodeTimeoutMs: 5_000,
  });
});
afterAll(async () => {
  await cluster?.dispose();
});

describe('Redis Cluster with replicas: failovers under a durable write loop', () => {
  it(`B3, C3, E2: ${ROUNDS} master kills and ${ROUNDS} CLUSTER FAILOVERs lose no save or append acknowledged with durability 'replicas'`, async () => {
    const base: RedisAdapterOptions = {
      clusterNodes: cluster.seeds,
      keyPrefix: uniquePrefix('cluster-failover'),
      connectTimeoutMs: 10_000,
      socketTimeoutMs: 2_000,
      durabilityTimeoutMs: 1_000,
    };
    const writer = new FailoverWriter({ ...base, durability: 'replicas', replicas: 1 }, SESSIONS);
    const reader = { options: { ...base, durability: 'none' as const } };
    const steps: string[] = [];
    try {
      await writer.untilAcknowledged(SESSIONS * 2);
      for (let round = 1; round <= ROUNDS; round++) {
        for (const how of ['kill', 'cluster failover'] as const) {
          const point = randomBetween(1, 40);
          await writer.untilAcknowledged(point);
          const roles = await cluster.roles();
          const pick = (role: 'master' | 'slave') => {
            const nodes = [...roles].filter(([, each]) => each === role).map(([node]) => node);
            return nodes[randomBetween(0, nodes.length - 1)]!;
          };
          if (how === 'kill') {
            const master = pick('master');
            steps.push(`kill ${master.port} after ${point}`);
            await cluster.killMaster(master);
          } else {
            const replica = pick('slave');
            steps.push(`failover ${replica.port} after ${point}`);
            await cluster.manualFailover(replica);
          }
          await writer.untilAcknowledged(SESSIONS * 2);
          const result = await checkHistory(reader, writer.snapshot());
          expect(result.problems, steps.join('; ')).toEqual([]);
          expect(writer.violations).toEqual([]);
        }
      }
      await writer.stop();
    } finally {
      writer.kill();
    }
    expect(writer.failures.length).toBeGreaterThan(0);
    expect(writer.failures.filter((failure) => !failure.retryable)).toEqual([]);
    expect(writer.violations).toEqual([]);
    console.info(
      `cluster failover: ${steps.join('; ')}; ${writer.acknowledged} acknowledged, ` +
        `${writer.failures.length} failed writes (all retryable), 0 lost`,
    );
  }, 900_000);
});
