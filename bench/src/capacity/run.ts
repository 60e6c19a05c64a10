/**
 * The capacity measurement behind docs/scaling.md (issue 41 item 8). Not part of CI.
 *
 *   pnpm --filter @keepsake/bench exec tsx src/capacity/run.ts [--backends fs,redis,redis-cluster,s3]
 *     [--quick] [--s3-window-ms 100] [--out file.json]
 *
 * For each backend it starts locally (fs on a temp dir; redis-server and a 3-master Cluster
 * on free ports through @keepsake/redis/testing; Ceph RGW through @keepsake/s3/testing):
 *
 * 1. calibration, 1/1000 of the load: 1,000 stored sessions, then 10 streams for a window
 *    without remote followers and one with every run followed from a second store;
 * 2. unit costs from it (per turn, per follower-second, per stored session);
 * 3. the check, 1/100 of the load: 9,000 more sessions (10,000), 100 streams, 10 of them
 *    followed remotely; the model's prediction from (2) printed beside what was measured;
 * 4. the full-scale prediction (10,000 streams, 1,000,000 sessions, 1,000 remote followers)
 *    from the check's per-turn costs, and a sizing under the stated assumptions.
 */
import { writeFile } from 'node:fs/promises';
import { cpus, loadavg, totalmem } from 'node:os';
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
import {
  fsProbe,
  type Probe,
  redisClusterProbe,
  redisProbe,
  type Snapshot,
  s3Probe,
} from './probes.js';
import { bytes, checkTable, figure, sizingTable } from './report.js';
import { runStreams, storeSessions, TURN } from './workload.js';

const NOMINAL_TURN_MS = TURN.tokensPerTurn * TURN.tokenIntervalMs;
const FULL: Load = { streams: 10_000, storedSessions: 1_000_000, followers: 1_000 };

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

interface Options {
  backends: string[];
  quick: boolean;
  calibrationStreams: number;
  fullFrom: 'check' | 'calibration';
  s3WindowMs: number;
  out: string | null;
}

function parseOptions(argv: readonly string[]): Options {
  const options: Options = {
    backends: ['fs', 'redis', 'redis-cluster', 's3'],
    quick: false,
    calibrationStreams: 10,
    fullFrom: 'check',
    s3WindowMs: 100,
    out: null,
  };
  for (let index = 0; index < argv.length; index++) {
    const argument = argv[index];
    const value = () => {
      const next = argv[++index];
      if (next === undefined) throw new Error(`${argument} needs a value`);
      return next;
    };
    if (argument === '--backends') options.backends = value().split(',');
    else if (argument === '--quick') options.quick = true;
    else if (argument === '--calibration-streams') options.calibrationStreams = Number(value());
    else if (argument === '--full-from') {
      const from = value();
      if (from !== 'check' && from !== 'calibration')
        throw new Error('--full-from check|calibration');
      options.fullFrom = from;
    } else if (argument === '--s3-window-ms') options.s3WindowMs = Number(value());
    else if (argument === '--out') options.out = value();
    else if (argument !== '--') throw new Error(`unknown option ${argument}`);
  }
  return options;
}

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

async function measureBackend(probe: Probe, options: Options) {
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

type BackendResult = Awaited<ReturnType<typeof measureBackend>>;

function costsTable(result: BackendResult): string {
  const { fullCosts: costs, windows } = result;
  const turn = Object.entries(costs.perTurn.counts)
    .filter(([, value]) => Math.abs(value) >= 0.05)
    .sort(([, left], [, right]) => right - left)
    .map(([name, value]) => `${figure(value)} ${name}`)
    .join(', ');
  const follower = Object.entries(costs.perFollowerSecond.counts)
    .filter(([, value]) => Math.abs(value) >= 0.05)
    .sort(([, left], [, right]) => right - left)
    .map(([name, value]) => `${figure(value)} ${name}`)
    .join(', ');
  const rows: Array<[string, string]> = [
    ['turn time measured in the calibration (ms)', figure(windows.plain.meanTurnMs)],
    ['turn time measured in the check (ms)', figure(windows.check.meanTurnMs)],
    ['turn time used at full scale (ms)', figure(costs.turnMs)],
    [`${result.countsUnit} per turn`, turn],
    ['bytes written per turn', bytes(costs.perTurn.bytesWritten)],
    ['Node CPU per turn (µs)', figure(costs.perTurn.nodeCpuMicros)],
    ['server CPU per turn (µs)', figure(costs.perTurn.serverCpuMicros)],
    ['stored growth per turn', bytes(costs.perTurn.storedBytes)],
    [
      'pages dirtied per turn (fs: write_bytes)',
      windows.check.pageBytes === null ? '—' : bytes(windows.check.pageBytes / windows.check.turns),
    ],
    [
      'share of commands on the busiest node (Cluster)',
      windows.check.countsByNode.length > 1
        ? `${((100 * Math.max(...windows.check.countsByNode)) / windows.check.countsByNode.reduce((a, b) => a + b, 0)).toFixed(0)}% (${windows.check.countsByNode.map((count) => figure(count / windows.check.seconds)).join(' / ')} per s)`
        : '—',
    ],
    [
      'per stored session',
      `${bytes(costs.perSession.bytes)}, ${figure(costs.perSession.items)} items`,
    ],
    [`${result.countsUnit} per follower-second (calibration)`, follower || '0'],
    ['Node CPU per follower-second (µs)', figure(costs.perFollowerSecond.nodeCpuMicros)],
    ['server CPU per follower-second (µs)', figure(costs.perFollowerSecond.serverCpuMicros)],
    ['RSS at the end of the check window', bytes(windows.check.rss)],
    [
      'followers that did not see `completed`',
      String(windows.check.followerProblems + windows.followed.followerProblems),
    ],
  ];
  return [
    `| unit cost (per turn: from the ${result.fullFrom} run) | value |`,
    '|---|---|',
    ...rows.map((row) => `| ${row.join(' | ')} |`),
  ].join('\n');
}

function markdown(results: readonly BackendResult[]): string {
  const parts = [
    `# Capacity run ${new Date().toISOString()}`,
    '',
    `Machine: ${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}, ${bytes(totalmem())}, Node ${process.version}, load average at the end ${loadavg()
      .map((value) => value.toFixed(2))
      .join(' ')}.`,
    `Turn: ${TURN.tokensPerTurn} tokens of ${TURN.tokenChars} characters, one every ${TURN.tokenIntervalMs} ms on average (0.5–1.5×), a ${TURN.userChars}-character user message; stored session: ${TURN.storedMessages} messages.`,
  ];
  for (const result of results) {
    parts.push(
      '',
      `## ${result.backend}`,
      '',
      result.description,
      '',
      `Counts: ${result.countsAre}. Bytes written: ${result.bytesWrittenAre}. Stored: ${result.storedAre}.`,
      `Windows: calibration (${result.calibrationStreams} streams) ${figure(result.windows.plain.turns)} turns in ${result.windows.plain.seconds.toFixed(1)} s (plain), ${figure(result.windows.followed.turns)} (followed); check ${figure(result.windows.check.turns)} turns in ${result.windows.check.seconds.toFixed(1)} s. Storing ${result.storage.more.sessions} sessions took ${result.storage.more.seconds.toFixed(1)} s.`,
      '',
      '### Check: 100 streams, 10,000 sessions, 10 remote followers',
      '',
      checkTable(result.predicted, result.predictedAtRate, result.measured, result.countsUnit),
      '',
      '### Unit costs',
      '',
      costsTable(result),
      '',
      '### Full scale: 10,000 streams, 1,000,000 sessions, 1,000 remote followers',
      '',
      sizingTable(result.full, result.sizing, result.countsUnit),
    );
  }
  return parts.join('\n');
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  const results: BackendResult[] = [];
  for (const name of options.backends) {
    const probe =
      name === 'fs'
        ? await fsProbe()
        : name === 'redis'
          ? await redisProbe()
          : name === 'redis-cluster'
            ? await redisClusterProbe()
            : name === 's3'
              ? await s3Probe(options.s3WindowMs)
              : null;
    if (probe === null) throw new Error(`unknown backend ${name}`);
    try {
      results.push(await measureBackend(probe, options));
    } finally {
      await probe.dispose();
    }
    if (options.out !== null) await writeFile(options.out, JSON.stringify(results, null, 2));
  }
  process.stdout.write(`${markdown(results)}\n`);
}

await main();
