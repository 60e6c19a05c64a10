import { createSessionStore, type SessionStore } from '@keepsake/core';
import {
  type Load,
  observed,
  predict,
  refine,
  type SizingAssumptions,
  type StorageMeasurement,
  size,
  type UnitCosts,
  unitCosts,
  type WindowMeasurement,
} from './model.js';
import type { Probe, Snapshot } from './probes.js';
import { runStreams, storeSessions, TURN } from './workload.js';

/** How a backend is measured: the calibration's streams, and which run sizes full scale. */
export interface MeasureOptions {
  readonly quick: boolean;
  readonly calibrationStreams: number;
  readonly fullFrom: 'check' | 'calibration';
}

export const NOMINAL_TURN_MS = TURN.tokensPerTurn * TURN.tokenIntervalMs;
export const FULL: Load = { streams: 10_000, storedSessions: 1_000_000, followers: 1_000 };

/** Choices, not measurements: docs/scaling.md says why each. */
export const ASSUMPTIONS: SizingAssumptions = {
  nodeCoreBudget: 0.7,
  // bench/results/latest.md, server section, 50 chats: the HTTP + SSE server made 29.6
  // sends/s where the same agent appending directly made 70.9 (both CPU-bound on 2 cores).
  httpCpuFactor: 70.9 / 29.6,
  redisCoreBudget: 0.5,
  redisMemoryPerShard: 16 * 1_024 ** 3,
  retainedGrowthSeconds: 86_400,
  s3LeasePutsPerSecond: 1,
  s3AdaptersPerProcess: 1,
  // AWS S3 Standard, us-east-1 list prices per 1,000 requests (DELETE is free).
  pricePerThousand: {
    PutObject: 0.005,
    CopyObject: 0.005,
    ListObjectsV2: 0.005,
    GetObject: 0.0004,
    HeadObject: 0.0004,
    DeleteObject: 0,
    DeleteObjects: 0,
  },
  defaultPricePerThousand: 0.005,
};

function difference(before: Snapshot, after: Snapshot): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const [name, value] of Object.entries(after.counts)) {
    const added = value - (before.counts[name] ?? 0);
    if (added !== 0) counts[name] = added;
  }
  return counts;
}

/** One window of streams, measured between two snapshots. */
async function measureWindow(
  probe: Probe,
  stores: { main: SessionStore; follower: SessionStore },
  settings: { streams: number; followed: number; sessions: number; measureMs: number },
  seed: number,
): Promise<
  WindowMeasurement & {
    rss: number;
    followerProblems: number;
    pageBytes: number | null;
    countsByNode: number[];
  }
> {
  let before: Snapshot | null = null;
  let after: Snapshot | null = null;
  let cpuBefore = process.cpuUsage();
  let cpuAfter = process.cpuUsage(cpuBefore);
  let storedBefore = 0;
  let storedAfter = 0;
  let rss = 0;
  const result = await runStreams({
    store: stores.main,
    followerStore: settings.followed > 0 ? stores.follower : null,
    streams: settings.streams,
    followed: settings.followed,
    sessions: settings.sessions,
    warmupMs: 5_000,
    measureMs: settings.measureMs,
    seed,
    atWindowStart: async () => {
      storedBefore = (await probe.stored()).bytes;
      before = await probe.snapshot();
      cpuBefore = process.cpuUsage();
    },
    atWindowEnd: async () => {
      cpuAfter = process.cpuUsage(cpuBefore);
      after = await probe.snapshot();
      rss = process.memoryUsage().rss;
      storedAfter = (await probe.stored()).bytes;
    },
  });
  const first = before as unknown as Snapshot;
  const last = after as unknown as Snapshot;
  return {
    streams: settings.streams,
    followers: settings.followed,
    seconds: result.seconds,
    turns: result.tokens / TURN.tokensPerTurn,
    tokens: result.tokens,
    meanTurnMs: result.meanTurnMs,
    counts: difference(first, last),
    bytesWritten: last.bytesWritten - first.bytesWritten,
    nodeCpuMicros: cpuAfter.user + cpuAfter.system,
    serverCpuMicros:
      first.serverCpuMicros === null || last.serverCpuMicros === null
        ? null
        : last.serverCpuMicros - first.serverCpuMicros,
    storedBytesGrowth: storedAfter - storedBefore,
    rss,
    followerProblems: result.followerProblems,
    pageBytes:
      first.pageBytes === null || last.pageBytes === null ? null : last.pageBytes - first.pageBytes,
    countsByNode: last.countsByNode.map((count, index) => count - (first.countsByNode[index] ?? 0)),
  };
}

async function storeAndMeasure(
  probe: Probe,
  store: SessionStore,
  from: number,
  count: number,
): Promise<StorageMeasurement & { seconds: number }> {
  const before = await probe.stored();
  const started = performance.now();
  await storeSessions(store, from, count);
  const seconds = (performance.now() - started) / 1_000;
  const after = await probe.stored();
  return {
    sessions: count,
    bytes: after.bytes - before.bytes,
    items: after.items - before.items,
    seconds,
  };
}

function countsUnitOf(probe: Probe): string {
  return probe.backend === 's3' ? 'requests' : probe.backend === 'fs' ? 'calls' : 'commands';
}

export async function measureBackend(probe: Probe, options: MeasureOptions) {
  const { quick, calibrationStreams } = options;
  const log = (line: string) => process.stderr.write(`[${probe.backend}] ${line}\n`);
  const main = createSessionStore({ adapter: probe.adapter('main'), journal: probe.journal });
  const follower = createSessionStore({
    adapter: probe.adapter('follower'),
    journal: probe.journal,
  });
  const stores = { main, follower };
  const scale = quick ? 0.2 : 1;
  const calibrationSessions = Math.round(1_000 * scale);
  const checkSessions = Math.round(10_000 * scale);
  const measureMs = quick ? 8_000 : 30_000;
  try {
    log(`storing ${calibrationSessions} sessions`);
    const calibrationStorage = await storeAndMeasure(probe, main, 0, calibrationSessions);
    log(`calibration: ${calibrationStreams} streams, no remote follower`);
    const plain = await measureWindow(
      probe,
      stores,
      { streams: calibrationStreams, followed: 0, sessions: calibrationSessions, measureMs },
      1,
    );
    log(
      `calibration: each stream followed from a second store (${plain.turns.toFixed(1)} turns before)`,
    );
    const followed = await measureWindow(
      probe,
      stores,
      {
        streams: calibrationStreams,
        followed: calibrationStreams,
        sessions: calibrationSessions,
        measureMs,
      },
      2,
    );
    const costs: UnitCosts = unitCosts(plain, followed, calibrationStorage);
    log(`storing ${checkSessions - calibrationSessions} more sessions`);
    const more = await storeAndMeasure(
      probe,
      main,
      calibrationSessions,
      checkSessions - calibrationSessions,
    );
    const checkStorage: StorageMeasurement = {
      sessions: checkSessions,
      bytes: calibrationStorage.bytes + more.bytes,
      items: calibrationStorage.items + more.items,
    };
    log(`check: 100 streams, 10 followed remotely`);
    const check = await measureWindow(
      probe,
      stores,
      { streams: 100, followed: 10, sessions: checkSessions, measureMs },
      3,
    );
    const checkLoad: Load = { streams: 100, storedSessions: checkSessions, followers: 10 };
    const predicted = predict(costs, checkLoad);
    const measured = observed(check, checkStorage);
    const predictedAtRate = predict(costs, checkLoad, measured.turnsPerSecond);
    // At full scale the model sets the pace (tokens × mean gap), not this shared machine,
    // whose load stretches the measured turn: more turns per second, the larger sizing.
    const fullCosts = {
      ...(options.fullFrom === 'check' ? refine(costs, check, checkStorage) : costs),
      turnMs: NOMINAL_TURN_MS,
    };
    const full = predict(fullCosts, FULL);
    const backend = probe.backend === 'redis-cluster' ? 'redis' : probe.backend;
    const sizing = size(full, ASSUMPTIONS, backend);
    return {
      backend: probe.backend,
      calibrationStreams,
      fullFrom: options.fullFrom,
      description: probe.description,
      countsAre: probe.countsAre,
      bytesWrittenAre: probe.bytesWrittenAre,
      storedAre: probe.storedAre,
      countsUnit: countsUnitOf(probe),
      windows: { plain, followed, check },
      storage: { calibration: calibrationStorage, more, check: checkStorage },
      costs,
      fullCosts,
      predicted,
      predictedAtRate,
      measured,
      full,
      sizing,
    };
  } finally {
    await Promise.allSettled([main.close(), follower.close()]);
  }
}

export type BackendResult = Awaited<ReturnType<typeof measureBackend>>;
