import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isMarkedNotVerified } from '../src/harness/not-verified.js';
import type { VitestJsonReport } from '../src/report/summarize.js';
import { MUTANTS } from './mutants/mutants.js';

/**
 * The suite's evidence that it can fail (issue 24): every mutant of the gallery
 * (test/mutants/mutants.ts) runs through the conformance suite in one vitest child
 * process, and each must fail at least one test. A surviving mutant fails CI.
 */
const packageDirectory = fileURLToPath(new URL('..', import.meta.url));
const vitestEntry = join(
  dirname(createRequire(import.meta.url).resolve('vitest/package.json')),
  'vitest.mjs',
);

interface SuiteOutcome {
  passed: number;
  failed: number;
  notVerified: number;
  /** Names of the tests that failed, and of those reported "not verified". */
  failedTests: string[];
  notVerifiedTests: string[];
}

const outcomes = new Map<string, SuiteOutcome>();
let childOutput = '';
const workDirectory = mkdtempSync(join(tmpdir(), 'keepsake-mutant-gallery-'));

beforeAll(() => {
  const outputFile = join(workDirectory, 'gallery.json');
  const child = spawnSync(
    process.execPath,
    [
      vitestEntry,
      'run',
      '--config',
      'test/mutants/vitest.config.ts',
      '--reporter=json',
      `--outputFile=${outputFile}`,
    ],
    { cwd: packageDirectory, encoding: 'utf8', env: { ...process.env, NO_COLOR: '1', CI: '1' } },
  );
  childOutput = `${child.stdout}\n${child.stderr}`;
  const report = JSON.parse(readFileSync(outputFile, 'utf8')) as VitestJsonReport;
  for (const file of report.testResults) {
    for (const test of file.assertionResults as Array<
      VitestJsonReport['testResults'][number]['assertionResults'][number] & {
        ancestorTitles: string[];
        title: string;
      }
    >) {
      const suite = test.ancestorTitles[0] ?? '';
      const outcome = outcomes.get(suite) ?? {
        passed: 0,
        failed: 0,
        notVerified: 0,
        failedTests: [],
        notVerifiedTests: [],
      };
      if (test.status === 'failed') {
        outcome.failed++;
        outcome.failedTests.push(test.title);
      } else if (isMarkedNotVerified(test.meta)) {
        outcome.notVerified++;
        outcome.notVerifiedTests.push(test.title);
      } else outcome.passed++;
      outcomes.set(suite, outcome);
    }
  }
}, 600_000);

afterAll(() => {
  rmSync(workDirectory, { recursive: true, force: true });
});

describe('the mutant gallery: the suite fails every broken adapter', () => {
  it('has at least 25 mutants, each with a distinct name', () => {
    expect(MUTANTS.length).toBeGreaterThanOrEqual(25);
    expect(new Set(MUTANTS.map((mutant) => mutant.name)).size).toBe(MUTANTS.length);
  });

  for (const mutant of MUTANTS) {
    it(`catches ${mutant.name}: ${mutant.defect}`, () => {
      const outcome = outcomes.get(`keepsake conformance: mutant:${mutant.name}`);
      expect(outcome, `the mutant's suite did not run:\n${childOutput.slice(-4000)}`).toBeDefined();
      expect(
        outcome!.failed,
        `mutant ${mutant.name} survived ${mutant.clauses.join(', ')}`,
      ).toBeGreaterThan(0);
    });
  }

  it('reports a durability defect as "not verified" when the initializer cannot crash', () => {
    const outcome = outcomes.get('keepsake conformance: unverified:durable-ignored');
    expect(outcome).toBeDefined();
    expect(outcome!.failed).toBe(0);
    expect(outcome!.notVerified).toBeGreaterThan(0);
  });

  it('reports the tests a defect fails as "not verified" when the crash hook loses nothing (issue 42)', () => {
    const caught = outcomes.get('keepsake conformance: mutant:durable-ignored');
    const lossless = outcomes.get('keepsake conformance: lossless-crash:durable-ignored');
    expect(caught?.failedTests.length, 'a real power loss catches the defect').toBeGreaterThan(0);
    expect(lossless).toBeDefined();
    expect(lossless!.failed).toBe(0);
    for (const name of caught!.failedTests) {
      expect(lossless!.notVerifiedTests, `with a lossless crash hook, "${name}"`).toContain(name);
    }
  });
});
