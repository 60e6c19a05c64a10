#!/usr/bin/env node
/**
 * The soak run of the model-based section (nightly-style): the randomized tests
 * ("model-based" in their names) of every adapter in report-adapters.json, many runs each,
 * large worlds, a new seed per iteration. Every seed is printed before it runs, and a
 * failure ends with the command that reproduces it. Exits non-zero when any run failed.
 *
 *   pnpm --filter @keepsake/conformance run soak
 *   node scripts/soak-model.mjs --adapter fs --iterations 10 --runs 500 --size large
 *
 * Flags override the environment: KEEPSAKE_SOAK_ITERATIONS (default 3),
 * KEEPSAKE_MODEL_RUNS (runs per test, default 200), KEEPSAKE_MODEL_SIZE (default large),
 * KEEPSAKE_MODEL_SEED (the first iteration's seed; random by default, then +1 each).
 */
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { readAdaptersConfig } from '../dist/report/adapters-config.js';

const packageRoot = join(dirname(fileURLToPath(import.meta.url)), '..');

const { values } = parseArgs({
  options: {
    config: { type: 'string', default: join(packageRoot, 'report-adapters.json') },
    adapter: { type: 'string', multiple: true },
    iterations: { type: 'string', default: process.env.KEEPSAKE_SOAK_ITERATIONS ?? '3' },
    runs: { type: 'string', default: process.env.KEEPSAKE_MODEL_RUNS ?? '200' },
    size: { type: 'string', default: process.env.KEEPSAKE_MODEL_SIZE ?? 'large' },
    seed: { type: 'string', default: process.env.KEEPSAKE_MODEL_SEED },
  },
});

const iterations = positiveInteger(values.iterations, '--iterations');
const runs = positiveInteger(values.runs, '--runs');
if (values.size !== 'small' && values.size !== 'large') fail('--size must be small or large');
const firstSeed =
  values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(values.seed);
if (!Number.isSafeInteger(firstSeed)) fail('--seed must be an integer');

const adapters = (await readAdaptersConfig(values.config)).filter(
  (adapter) => values.adapter === undefined || values.adapter.includes(adapter.name),
);
if (adapters.length === 0) fail('no adapter selected');

const failures = [];
for (let iteration = 0; iteration < iterations; iteration++) {
  const seed = firstSeed + iteration;
  for (const adapter of adapters) {
    const where = relative(process.cwd(), adapter.directory) || '.';
    process.stdout.write(
      `\nsoak ${iteration + 1}/${iterations}: ${adapter.name}, KEEPSAKE_MODEL_SEED=${seed}, ${runs} runs per test, size ${values.size} (${where})\n`,
    );
    const code = await runModelTests(adapter, { seed, runs, size: values.size });
    if (code !== 0) failures.push({ adapter, seed });
  }
}

if (failures.length === 0) {
  process.stdout.write(
    `\nsoak passed: ${iterations} iteration(s) on ${adapters.map((adapter) => adapter.name).join(', ')}\n`,
  );
} else {
  process.stdout.write(
    '\nsoak FAILED. Each failure above prints its counterexample; to replay one:\n',
  );
  for (const { adapter, seed } of failures) {
    process.stdout.write(
      `  cd ${relative(process.cwd(), adapter.directory) || '.'} && KEEPSAKE_MODEL_SIZE=${values.size} KEEPSAKE_MODEL_SEED=${seed} KEEPSAKE_MODEL_RUNS=${runs} pnpm exec vitest run ${adapter.testFile} -t "model-based"\n`,
    );
  }
  process.stdout.write(
    '  (add KEEPSAKE_MODEL_PATH=<path printed with the failure> and -t "<clause>: model-based" to replay exactly the shrunk case)\n',
  );
  process.exitCode = 1;
}

/** Runs the adapter's model-based tests in its own directory (its vitest config applies). */
function runModelTests(adapter, { seed, runs: runCount, size }) {
  const requireFromAdapter = createRequire(join(adapter.directory, 'package.json'));
  const vitestBin = join(dirname(requireFromAdapter.resolve('vitest/package.json')), 'vitest.mjs');
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [vitestBin, 'run', adapter.testFile, '-t', 'model-based'],
      {
        cwd: adapter.directory,
        stdio: 'inherit',
        env: {
          ...process.env,
          KEEPSAKE_MODEL_SEED: String(seed),
          KEEPSAKE_MODEL_RUNS: String(runCount),
          KEEPSAKE_MODEL_SIZE: size,
        },
      },
    );
    child.on('error', reject);
    child.on('exit', (code) => resolve(code));
  });
}

function positiveInteger(text, name) {
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value < 1) fail(`${name} must be a positive integer`);
  return value;
}

function fail(message) {
  process.stderr.write(`soak-model: ${message}\n`);
  process.exit(2);
}
