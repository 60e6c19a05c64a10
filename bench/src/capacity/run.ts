/**
 * The capacity measurement behind docs/scaling.md (issue 41 item 8). Not part of CI.
 *
 *   pnpm --filter @keepsake/bench run capacity -- [--backends fs,redis,redis-cluster,s3]
 *     [--quick] [--calibration-streams 10] [--full-from check|calibration]
 *     [--s3-window-ms 100] [--out file.json]
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
import { type BackendResult, type MeasureOptions, measureBackend } from './measure.js';
import { fsProbe, redisClusterProbe, redisProbe, s3Probe } from './probes.js';
import { markdown } from './report.js';

interface Options extends MeasureOptions {
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
