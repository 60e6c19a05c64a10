import { cpus, loadavg, totalmem } from 'node:os';
import type { BackendResult } from './measure.js';
import type { Counts, Prediction, Sizing } from './model.js';
import { ratio } from './model.js';
import { TURN } from './workload.js';

/** A figure for a table: three significant digits, thousands separated. */
export function figure(value: number | null): string {
  if (value === null || !Number.isFinite(value)) return '—';
  const magnitude = Math.abs(value);
  if (magnitude === 0) return '0';
  if (magnitude >= 100) return Math.round(value).toLocaleString('en-US');
  const digits = magnitude >= 10 ? 1 : magnitude >= 1 ? 2 : 3;
  return value.toLocaleString('en-US', {
    maximumFractionDigits: digits + (magnitude < 0.1 ? 1 : 0),
  });
}

export function bytes(value: number | null): string {
  if (value === null || !Number.isFinite(value)) return '—';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let scaled = value;
  let unit = 0;
  while (Math.abs(scaled) >= 1_024 && unit < units.length - 1) {
    scaled /= 1_024;
    unit++;
  }
  return `${figure(scaled)} ${units[unit]}`;
}

function ratioText(measured: number | null, predicted: number | null): string {
  const value = ratio(measured, predicted);
  return value === null ? '—' : `${value.toFixed(2)}×`;
}

/** The counts worth a row: the largest, by predicted or measured rate. */
function mainCounts(predicted: Counts, measured: Counts, rows: number): string[] {
  const names = new Set([...Object.keys(predicted), ...Object.keys(measured)]);
  return [...names]
    .map((name) => ({ name, rate: Math.max(predicted[name] ?? 0, measured[name] ?? 0) }))
    .filter((entry) => entry.rate > 0)
    .sort((left, right) => right.rate - left.rate)
    .slice(0, rows)
    .map((entry) => entry.name);
}

/** Predicted and measured side by side, with measured ÷ predicted. */
export function checkTable(
  paced: Prediction,
  predicted: Prediction,
  measured: Prediction,
  countsUnit: string,
): string {
  const rows: Array<[string, string, string, string]> = [
    [
      'turns/s (predicted from the calibration pace)',
      figure(paced.turnsPerSecond),
      figure(measured.turnsPerSecond),
      ratioText(measured.turnsPerSecond, paced.turnsPerSecond),
    ],
    [
      'turns/s (the measured rate; the rows below are predicted at it)',
      figure(predicted.turnsPerSecond),
      figure(measured.turnsPerSecond),
      ratioText(measured.turnsPerSecond, predicted.turnsPerSecond),
    ],
    [
      `${countsUnit}/s, all`,
      figure(predicted.operationsPerSecond),
      figure(measured.operationsPerSecond),
      ratioText(measured.operationsPerSecond, predicted.operationsPerSecond),
    ],
  ];
  for (const name of mainCounts(predicted.countsPerSecond, measured.countsPerSecond, 6)) {
    const left = predicted.countsPerSecond[name] ?? 0;
    const right = measured.countsPerSecond[name] ?? 0;
    rows.push([`  ${name}/s`, figure(left), figure(right), ratioText(right, left)]);
  }
  rows.push(
    [
      'bytes written/s',
      bytes(predicted.bytesWrittenPerSecond),
      bytes(measured.bytesWrittenPerSecond),
      ratioText(measured.bytesWrittenPerSecond, predicted.bytesWrittenPerSecond),
    ],
    [
      'Node CPU (cores)',
      figure(predicted.nodeCores),
      figure(measured.nodeCores),
      ratioText(measured.nodeCores, predicted.nodeCores),
    ],
    [
      'server CPU (cores)',
      figure(predicted.serverCores),
      figure(measured.serverCores),
      ratioText(measured.serverCores, predicted.serverCores),
    ],
    [
      'stored sessions: bytes',
      bytes(predicted.storedBytes),
      bytes(measured.storedBytes),
      ratioText(measured.storedBytes, predicted.storedBytes),
    ],
    [
      'stored sessions: files/keys/objects',
      figure(predicted.storedItems),
      figure(measured.storedItems),
      ratioText(measured.storedItems, predicted.storedItems),
    ],
    [
      'stored growth from turns/s',
      bytes(predicted.storedBytesGrowthPerSecond),
      bytes(measured.storedBytesGrowthPerSecond),
      ratioText(measured.storedBytesGrowthPerSecond, predicted.storedBytesGrowthPerSecond),
    ],
  );
  return [
    '| figure | predicted | measured | measured ÷ predicted |',
    '|---|---|---|---|',
    ...rows.map((row) => `| ${row.join(' | ')} |`),
  ].join('\n');
}

/** The full-scale figures and sizing. */
export function sizingTable(prediction: Prediction, sizing: Sizing, countsUnit: string): string {
  const rows: Array<[string, string]> = [
    ['turns/s', figure(prediction.turnsPerSecond)],
    [`${countsUnit}/s`, figure(prediction.operationsPerSecond)],
    ...mainCounts(prediction.countsPerSecond, {}, 6).map((name): [string, string] => [
      `  ${name}/s`,
      figure(prediction.countsPerSecond[name] ?? 0),
    ]),
    ['bytes written/s', bytes(prediction.bytesWrittenPerSecond)],
    ['Node CPU, store only (cores)', figure(prediction.nodeCores)],
    ['server CPU (cores)', figure(prediction.serverCores)],
    ['stored sessions', bytes(prediction.storedBytes)],
    ['stored items', figure(prediction.storedItems)],
    ['stored growth per day from turns', bytes(prediction.storedBytesGrowthPerSecond * 86_400)],
    ['server instances', String(sizing.instances)],
    [
      'Redis shards by CPU',
      sizing.redisShardsByCpu === null ? '—' : String(sizing.redisShardsByCpu),
    ],
    [
      'Redis shards by memory, sessions only',
      sizing.redisShardsByMemory === null ? '—' : String(sizing.redisShardsByMemory),
    ],
    [
      'Redis shards by memory, with one day of turns',
      sizing.redisShardsByMemoryWithGrowth === null
        ? '—'
        : String(sizing.redisShardsByMemoryWithGrowth),
    ],
    ['requests/s with leases', figure(sizing.requestsPerSecond)],
    ['requests per 30-day month', figure(sizing.requestsPerMonth)],
    ['request cost per month (USD)', figure(sizing.requestCostPerMonth)],
  ];
  return ['| figure | value |', '|---|---|', ...rows.map((row) => `| ${row.join(' | ')} |`)].join(
    '\n',
  );
}

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

export function markdown(results: readonly BackendResult[]): string {
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
      `### Check: 100 streams, ${result.storage.check.sessions.toLocaleString('en-US')} sessions, 10 remote followers`,
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
