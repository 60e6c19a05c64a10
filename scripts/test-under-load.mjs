// Runs test suites while every CPU is oversubscribed, to show that they pass on a busy
// machine (issue 35: CI on a machine at load 10-30 failed where an idle one passed). A test
// may be slower under load, never wrong: one that fails here depends on wall time (a grace,
// a sleep, a timeout racing work) where it should wait for an event or move the store's
// ManualClock.
//
//   node scripts/test-under-load.mjs                      ai-sdk, server and conformance
//   node scripts/test-under-load.mjs ai-sdk server        only these suites
//   node scripts/test-under-load.mjs ai-sdk -- test/resume.test.ts   arguments for vitest
//
// `--per-cpu=N` busy-loop processes per CPU (default 1) spin for the whole run, at the tests'
// own priority; CI failed at a load of 5 to 15 per CPU. `--no-build` skips the build that
// runs first (without load). Not part of `pnpm test` or CI: the suites take several times
// their usual time here. Exits non-zero when a suite fails.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { availableParallelism, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const suites = {
  'ai-sdk': '@keepsake/ai-sdk',
  server: '@keepsake/server',
  conformance: '@keepsake/conformance',
};

const root = fileURLToPath(new URL('..', import.meta.url));
const argv = process.argv.slice(2);
const separator = argv.indexOf('--');
const vitestArguments = separator === -1 ? [] : argv.slice(separator + 1);
const { values: flags, positionals: chosen } = parseArgs({
  args: separator === -1 ? argv : argv.slice(0, separator),
  allowPositionals: true,
  allowNegative: true,
  options: {
    build: { type: 'boolean', default: true },
    'per-cpu': { type: 'string', default: '1' },
  },
});
for (const name of chosen) {
  if (!(name in suites)) {
    console.error(`unknown suite "${name}" (the suites are ${Object.keys(suites).join(', ')})`);
    process.exit(2);
  }
}
const selected = chosen.length > 0 ? chosen : Object.keys(suites);
if (vitestArguments.length > 0 && selected.length !== 1) {
  console.error('arguments after `--` go to vitest: name exactly one suite with them');
  process.exit(2);
}
const perCpu = Number(flags['per-cpu']);
if (!Number.isInteger(perCpu) || perCpu < 1) {
  console.error('--per-cpu must be a positive integer');
  process.exit(2);
}
const build = flags.build;

const environment = { ...process.env, TURBO_TELEMETRY_DISABLED: '1', DO_NOT_TRACK: '1' };

/** Runs a command in the repository root with this terminal; resolves with its exit code. */
async function run(command, commandArguments, current) {
  const child = spawn(command, commandArguments, { cwd: root, env: environment, stdio: 'inherit' });
  current.child = child;
  const [code, signal] = await once(child, 'exit');
  current.child = null;
  return code ?? (signal === null ? 1 : 128);
}

/**
 * One process that spins until it is killed. It also stops once its parent is gone (its
 * parent process id changes), so a killed run leaves no spinner behind; a pure loop never
 * runs its event loop, so it cannot hear of that any other way.
 */
const spinner = `
const parent = process.ppid;
let sink = 0;
for (;;) {
  for (let i = 0; i < 5e6; i++) sink = (sink + Math.sqrt(i)) % 1e9;
  if (process.ppid !== parent || sink < 0) break;
}`;

const busy = [];
const current = { child: null };
let stopping = null;

/** Kills the spinners (and a suite still running, on a signal) by their own process ids. */
function stopEverything() {
  stopping ??= (async () => {
    const exits = [];
    for (const child of [...busy, current.child]) {
      if (child === null || child.exitCode !== null || child.signalCode !== null) continue;
      exits.push(once(child, 'exit'));
      try {
        process.kill(child.pid, 'SIGKILL');
      } catch {
        // Gone already.
      }
    }
    await Promise.all(exits);
  })();
  return stopping;
}

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    console.error(`\n${signal}: stopping the busy loops and the running suite`);
    void stopEverything().then(() => {
      process.exitCode = 130;
    });
  });
}

const results = [];
let peakLoad = 0;
const sampler = setInterval(() => {
  peakLoad = Math.max(peakLoad, loadavg()[0]);
}, 2_000);
sampler.unref();

try {
  if (build) {
    const filters = selected.flatMap((name) => [`--filter=${suites[name]}...`]);
    const code = await run(
      'pnpm',
      ['exec', 'turbo', 'run', 'build', ...filters, '--output-logs=errors-only'],
      current,
    );
    if (code !== 0) throw new Error(`the build failed (exit ${code})`);
  }

  const cpus = availableParallelism();
  const count = cpus * perCpu;
  for (let index = 0; index < count; index++) {
    const child = spawn(process.execPath, ['-e', spinner], { stdio: 'ignore' });
    busy.push(child);
    await once(child, 'spawn');
  }
  console.log(
    `test-under-load: ${count} busy-loop processes on ${cpus} CPUs (pids ${busy.map((child) => child.pid).join(' ')})`,
  );

  for (const name of selected) {
    if (stopping !== null) break;
    const startedAt = performance.now();
    console.log(`\n==> ${name} (${suites[name]}) under load`);
    // pnpm hands whatever follows the script's name to the script (vitest run).
    const code = await run('pnpm', ['--filter', suites[name], 'test', ...vitestArguments], current);
    results.push({ name, code, seconds: (performance.now() - startedAt) / 1000 });
  }
} catch (error) {
  console.error(`test-under-load: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
} finally {
  clearInterval(sampler);
  peakLoad = Math.max(peakLoad, loadavg()[0]);
  await stopEverything();
}

if (results.length > 0) {
  console.log(`\ntest-under-load: peak 1-minute load average ${peakLoad.toFixed(1)}`);
  for (const { name, code, seconds } of results) {
    console.log(
      `  ${code === 0 ? 'passed' : `FAILED (exit ${code})`}  ${name}  ${seconds.toFixed(0)} s`,
    );
  }
}
const failed = results.some((result) => result.code !== 0) || results.length < selected.length;
if (failed) process.exitCode ||= 1;
