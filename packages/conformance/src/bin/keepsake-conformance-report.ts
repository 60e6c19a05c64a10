#!/usr/bin/env node
/**
 * keepsake-conformance-report [--config report-adapters.json] [--adapter name] [--json file]
 *
 * Runs the conformance suite of every adapter in the list with vitest's JSON reporter and
 * prints, per adapter, every clause A1…H3 with its passed / failed / declared-gap counts.
 * Exits non-zero when a test failed or an adapter's suite could not run.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import {
  PROJECT_CONFIG_FILE,
  type ReportedAdapter,
  readAdaptersConfig,
} from '../report/adapters-config.js';
import {
  type AdapterReport,
  formatReport,
  summarize,
  type VitestJsonReport,
} from '../report/summarize.js';

const packageRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

const { values } = parseArgs({
  options: {
    config: { type: 'string' },
    adapter: { type: 'string', multiple: true },
    json: { type: 'string' },
  },
});

/** Runs one adapter's test file in its own directory (its vitest config applies). */
async function runAdapter(adapter: ReportedAdapter, outputFile: string): Promise<number | null> {
  const requireFromAdapter = createRequire(join(adapter.directory, 'package.json'));
  let vitestPackage: string;
  try {
    vitestPackage = requireFromAdapter.resolve('vitest/package.json');
  } catch (cause) {
    throw new Error(
      `adapter "${adapter.name}": vitest cannot be found from ${adapter.directory}; add it as a dev dependency there`,
      { cause },
    );
  }
  const vitestBin = join(dirname(vitestPackage), 'vitest.mjs');
  return new Promise((resolvePromise, reject) => {
    const child = spawn(
      process.execPath,
      [vitestBin, 'run', adapter.testFile, '--reporter=json', `--outputFile=${outputFile}`],
      { cwd: adapter.directory, stdio: ['ignore', 'ignore', 'inherit'] },
    );
    child.on('error', reject);
    child.on('exit', (code) => resolvePromise(code));
  });
}

// Your project's list when it has one, else this repository's own (which names adapters
// that exist only in the Keepsake repository: see the README for a template).
const configFile =
  values.config ??
  (existsSync(PROJECT_CONFIG_FILE)
    ? PROJECT_CONFIG_FILE
    : join(packageRoot, 'report-adapters.json'));
const adapters = (await readAdaptersConfig(resolve(configFile))).filter(
  (adapter) => values.adapter === undefined || values.adapter.includes(adapter.name),
);
const workDirectory = await mkdtemp(join(tmpdir(), 'keepsake-conformance-report-'));
const reports: AdapterReport[] = [];
let broken = false;
try {
  for (const adapter of adapters) {
    const outputFile = join(workDirectory, `${adapter.name}.json`);
    process.stderr.write(`running the conformance suite for ${adapter.name}…\n`);
    const exitCode = await runAdapter(adapter, outputFile);
    let json: VitestJsonReport;
    try {
      json = JSON.parse(await readFile(outputFile, 'utf8')) as VitestJsonReport;
    } catch {
      process.stderr.write(`${adapter.name}: vitest exited with ${exitCode} and wrote no report\n`);
      broken = true;
      continue;
    }
    const report = summarize(adapter.name, join(adapter.directory, adapter.testFile), json);
    reports.push(report);
    if (report.failedTests.length > 0 || report.fileErrors.length > 0) broken = true;
    process.stdout.write(`${formatReport(report)}\n\n`);
  }
} finally {
  await rm(workDirectory, { recursive: true, force: true });
}
if (values.json !== undefined) {
  await writeFile(
    values.json,
    `${JSON.stringify({ generatedAt: new Date().toISOString(), adapters: reports }, null, 2)}\n`,
  );
}
process.exitCode = broken ? 1 : 0;
