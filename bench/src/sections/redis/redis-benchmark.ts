import { execFile, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The `redis-benchmark` binary (redis-tools), or KEEPSAKE_BENCH_REDIS_BENCHMARK. */
export const REDIS_BENCHMARK = process.env.KEEPSAKE_BENCH_REDIS_BENCHMARK ?? 'redis-benchmark';

/**
 * Runs `redis-benchmark` against `port` and returns its requests per second (the `rps`
 * column of its CSV output). `args` are the test's own: `-t set -d 1024 -c 50`, or a
 * custom command after the options.
 */
export async function redisBenchmark(port: number, args: readonly string[]): Promise<number> {
  const { stdout } = await run(
    REDIS_BENCHMARK,
    ['-h', '127.0.0.1', '-p', String(port), '--csv', ...args],
    {
      maxBuffer: 16 * 1024 * 1024,
    },
  );
  const row = stdout
    .trim()
    .split('\n')
    .find((line) => !line.startsWith('"test"'));
  const rps = row === undefined ? Number.NaN : Number(JSON.parse(`[${row}]`)[1]);
  if (!Number.isFinite(rps)) throw new Error(`redis-benchmark printed no rate:\n${stdout}`);
  return rps;
}

/** Whether a binary runs here (its `--version` exits 0). */
export function runs(binary: string): boolean {
  return spawnSync(binary, ['--version'], { stdio: 'ignore' }).status === 0;
}
