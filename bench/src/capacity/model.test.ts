import { describe, expect, it } from 'vitest';
import {
  observed,
  predict,
  ratio,
  refine,
  SECONDS_PER_MONTH,
  type SizingAssumptions,
  size,
  total,
  unitCosts,
  type WindowMeasurement,
} from './model.js';

const window = (overrides: Partial<WindowMeasurement>): WindowMeasurement => ({
  streams: 10,
  followers: 0,
  seconds: 10,
  turns: 20,
  tokens: 2_400,
  meanTurnMs: 5_000,
  counts: { PutObject: 2_000, HeadObject: 400 },
  bytesWritten: 2_000_000,
  nodeCpuMicros: 400_000,
  serverCpuMicros: 1_000_000,
  storedBytesGrowth: 200_000,
  ...overrides,
});

const storage = { sessions: 1_000, bytes: 4_000_000, items: 2_000 };

const assumptions: SizingAssumptions = {
  nodeCoreBudget: 0.5,
  httpCpuFactor: 2,
  redisCoreBudget: 0.5,
  redisMemoryPerShard: 1_000_000_000,
  retainedGrowthSeconds: 100,
  s3LeasePutsPerSecond: 1,
  s3AdaptersPerProcess: 1,
  pricePerThousand: { PutObject: 0.005, HeadObject: 0.0004 },
  defaultPricePerThousand: 0.005,
};

describe('unit costs', () => {
  const plain = window({});
  // Same streams, 10 followers: 20 turns' worth plus 500 HEADs and 1 s of CPU of followers.
  const followed = window({
    followers: 10,
    counts: { PutObject: 2_000, HeadObject: 900, ListObjectsV2: 300 },
    nodeCpuMicros: 500_000,
    serverCpuMicros: 1_200_000,
  });
  const costs = unitCosts(plain, followed, storage);

  it('divides the plain window by its turns', () => {
    expect(costs.turnMs).toBe(5_000);
    expect(costs.perTurn.counts).toEqual({ PutObject: 100, HeadObject: 20 });
    expect(costs.perTurn.bytesWritten).toBe(100_000);
    expect(costs.perTurn.nodeCpuMicros).toBe(20_000);
    expect(costs.perTurn.serverCpuMicros).toBe(50_000);
    expect(costs.perTurn.storedBytes).toBe(10_000);
    expect(costs.perSession).toEqual({ bytes: 4_000, items: 2 });
  });

  it('prices a follower-second as what the followed window spent beyond its turns', () => {
    // 10 followers × 10 s = 100 follower-seconds.
    expect(costs.perFollowerSecond.counts).toEqual({
      PutObject: 0,
      HeadObject: 5,
      ListObjectsV2: 3,
    });
    expect(costs.perFollowerSecond.nodeCpuMicros).toBe(1_000);
    expect(costs.perFollowerSecond.serverCpuMicros).toBe(2_000);
  });

  it('refuses a calibration without turns', () => {
    expect(() => unitCosts(window({ turns: 0 }), followed, storage)).toThrow(/no turn/);
  });

  it('predicts a load: streams over the turn time, plus followers and sessions', () => {
    const prediction = predict(costs, { streams: 100, storedSessions: 10_000, followers: 10 });
    expect(prediction.turnsPerSecond).toBe(20);
    expect(prediction.countsPerSecond).toEqual({
      PutObject: 2_000,
      HeadObject: 400 + 50,
      ListObjectsV2: 30,
    });
    expect(prediction.operationsPerSecond).toBe(2_480);
    expect(prediction.bytesWrittenPerSecond).toBe(2_000_000);
    expect(prediction.nodeCores).toBeCloseTo(0.41, 10);
    expect(prediction.serverCores).toBeCloseTo(1.02, 10);
    expect(prediction.storedBytes).toBe(40_000_000);
    expect(prediction.storedItems).toBe(20_000);
    expect(prediction.storedBytesGrowthPerSecond).toBe(200_000);
  });

  it('predicts at a given turn rate, to check the costs apart from the pace', () => {
    const prediction = predict(costs, { streams: 100, storedSessions: 0, followers: 0 }, 5);
    expect(prediction.turnsPerSecond).toBe(5);
    expect(prediction.countsPerSecond).toEqual({
      PutObject: 500,
      HeadObject: 100,
      ListObjectsV2: 0,
    });
  });

  it('turns a window into the same per-second units', () => {
    const measured = observed(window({}), storage);
    expect(measured.turnsPerSecond).toBe(2);
    expect(measured.operationsPerSecond).toBe(240);
    expect(measured.nodeCores).toBeCloseTo(0.04, 10);
    expect(measured.serverCores).toBeCloseTo(0.1, 10);
    expect(measured.storedBytes).toBe(4_000_000);
  });

  it('re-measures the turn costs on a larger window, the followers taken out', () => {
    const check = window({
      streams: 100,
      followers: 10,
      turns: 200,
      meanTurnMs: 6_000,
      // 200 turns at 90 PUTs and 20 HEADs, plus 100 follower-seconds at 5 HEADs and 3 LISTs.
      counts: { PutObject: 18_000, HeadObject: 4_500, ListObjectsV2: 300 },
      nodeCpuMicros: 3_100_000,
      serverCpuMicros: 9_200_000,
      storedBytesGrowth: 1_000_000,
    });
    const refined = refine(costs, check, { sessions: 10_000, bytes: 30_000_000, items: 10_000 });
    expect(refined.turnMs).toBe(6_000);
    expect(refined.perTurn.counts).toEqual({ PutObject: 90, HeadObject: 20, ListObjectsV2: 0 });
    expect(refined.perTurn.nodeCpuMicros).toBe(15_000);
    expect(refined.perTurn.serverCpuMicros).toBe(45_000);
    expect(refined.perTurn.storedBytes).toBe(5_000);
    expect(refined.perSession).toEqual({ bytes: 3_000, items: 1 });
    expect(refined.perFollowerSecond).toEqual(costs.perFollowerSecond);
  });
});

describe('sizing', () => {
  const prediction = {
    turnsPerSecond: 1_000,
    countsPerSecond: { PutObject: 10_000, HeadObject: 5_000 },
    operationsPerSecond: 15_000,
    bytesWrittenPerSecond: 0,
    nodeCores: 10,
    serverCores: 4.2,
    storedBytes: 2_500_000_000,
    storedItems: 0,
    storedBytesGrowthPerSecond: 10_000_000,
  };

  it('counts instances by Node CPU with the HTTP factor, and S3 leases per instance', () => {
    const sizing = size(prediction, assumptions, 's3');
    // 10 cores × 2 ÷ 0.5 per instance = 40 instances, each PUTting its lease once a second.
    expect(sizing.instances).toBe(40);
    expect(sizing.requestsPerSecond).toBe(15_040);
    expect(sizing.requestsPerMonth).toBe(15_040 * SECONDS_PER_MONTH);
    const perSecond = (10_040 / 1_000) * 0.005 + (5_000 / 1_000) * 0.0004;
    expect(sizing.requestCostPerMonth).toBeCloseTo(perSecond * SECONDS_PER_MONTH, 6);
    expect(sizing.redisShardsByCpu).toBeNull();
  });

  it('counts Redis shards by CPU and by memory, with and without retained growth', () => {
    const sizing = size(prediction, assumptions, 'redis');
    expect(sizing.redisShardsByCpu).toBe(9);
    expect(sizing.redisShardsByMemory).toBe(3);
    // 2.5 GB + 10 MB/s × 100 s = 3.5 GB.
    expect(sizing.redisShardsByMemoryWithGrowth).toBe(4);
    expect(sizing.requestsPerSecond).toBe(15_000);
    expect(sizing.requestCostPerMonth).toBe(0);
  });

  it('needs at least one of everything', () => {
    const idle = { ...prediction, nodeCores: 0, serverCores: 0, storedBytes: 0 };
    const sizing = size(idle, assumptions, 'redis');
    expect([sizing.instances, sizing.redisShardsByCpu, sizing.redisShardsByMemory]).toEqual([
      1, 1, 1,
    ]);
  });
});

describe('helpers', () => {
  it('sums and divides', () => {
    expect(total({ a: 1, b: 2.5 })).toBe(3.5);
    expect(ratio(3, 2)).toBe(1.5);
    expect(ratio(null, 2)).toBeNull();
    expect(ratio(3, 0)).toBeNull();
  });
});
