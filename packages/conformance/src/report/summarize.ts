import { CLAUSE_IDS, type ClauseId, clauseOfTestName, DECLARED_GAP_MARKER } from '../clauses.js';
import { isMarkedNotVerified, NOT_VERIFIED_NOTE } from '../harness/not-verified.js';

/** The part of vitest's JSON reporter output the clause report reads. */
export interface VitestJsonReport {
  testResults: Array<{
    name: string;
    status: string;
    message?: string;
    assertionResults: Array<{ title: string; fullName: string; status: string; meta?: unknown }>;
  }>;
}

export interface ClauseCounts {
  passed: number;
  failed: number;
  declaredGap: number;
  /**
   * Passed, but proved nothing about durability: the test needed a machine crash and the
   * initializer has no `simulateCrash` (issue 24). Not counted in `passed`.
   */
  notVerified: number;
  /** Skipped or todo: never expected from this suite, so reported. */
  skipped: number;
}

export interface AdapterReport {
  name: string;
  testFile: string;
  /** Every clause id A1…H3, in order, with its counts (zeros when it has no test). */
  clauses: Record<ClauseId, ClauseCounts>;
  failedTests: string[];
  declaredGaps: string[];
  /** Tests counted in `notVerified`. */
  notVerifiedTests: string[];
  /** Tests whose names start with no clause id. */
  unclassified: string[];
  /** A test file that failed before its tests ran (a setup error, a syntax error). */
  fileErrors: string[];
}

/** Folds one vitest JSON report into per-clause counts. */
export function summarize(name: string, testFile: string, json: VitestJsonReport): AdapterReport {
  const clauses = Object.fromEntries(
    CLAUSE_IDS.map((id) => [
      id,
      { passed: 0, failed: 0, declaredGap: 0, notVerified: 0, skipped: 0 },
    ]),
  ) as Record<ClauseId, ClauseCounts>;
  const report: AdapterReport = {
    name,
    testFile,
    clauses,
    failedTests: [],
    declaredGaps: [],
    notVerifiedTests: [],
    unclassified: [],
    fileErrors: [],
  };
  for (const file of json.testResults) {
    if (file.status === 'failed' && file.assertionResults.length === 0) {
      report.fileErrors.push(`${file.name}: ${file.message ?? 'failed before its tests ran'}`);
    }
    for (const test of file.assertionResults) {
      const clause = clauseOfTestName(test.title);
      if (clause === null) {
        report.unclassified.push(test.fullName);
        continue;
      }
      const counts = clauses[clause];
      if (test.title.includes(DECLARED_GAP_MARKER) && test.status === 'passed') {
        counts.declaredGap++;
        report.declaredGaps.push(test.title);
      } else if (test.status === 'passed' && isMarkedNotVerified(test.meta)) {
        counts.notVerified++;
        report.notVerifiedTests.push(test.title);
      } else if (test.status === 'passed') counts.passed++;
      else if (test.status === 'failed') {
        counts.failed++;
        report.failedTests.push(test.title);
      } else counts.skipped++;
    }
  }
  return report;
}

/** A fixed-width table: one line per clause, then the totals and the failures. */
export function formatReport(report: AdapterReport): string {
  const lines = [
    `${report.name}  (${report.testFile})`,
    'clause  passed  failed  gap  unverified  note',
  ];
  const total: ClauseCounts = { passed: 0, failed: 0, declaredGap: 0, notVerified: 0, skipped: 0 };
  for (const id of CLAUSE_IDS) {
    const counts = report.clauses[id];
    total.passed += counts.passed;
    total.failed += counts.failed;
    total.declaredGap += counts.declaredGap;
    total.skipped += counts.skipped;
    total.notVerified += counts.notVerified;
    const tests = counts.passed + counts.failed + counts.declaredGap + counts.notVerified;
    const note =
      tests === 0 ? 'no test ran' : counts.skipped > 0 ? `${counts.skipped} skipped` : '';
    lines.push(
      `${id.padEnd(6)}  ${String(counts.passed).padStart(6)}  ${String(counts.failed).padStart(6)}  ${String(counts.declaredGap).padStart(3)}  ${String(counts.notVerified).padStart(10)}  ${note}`.trimEnd(),
    );
  }
  lines.push(
    `${'total'.padEnd(6)}  ${String(total.passed).padStart(6)}  ${String(total.failed).padStart(6)}  ${String(total.declaredGap).padStart(3)}  ${String(total.notVerified).padStart(10)}`,
  );
  for (const error of report.fileErrors) lines.push(`  file error: ${error}`);
  for (const name of report.failedTests) lines.push(`  failed: ${name}`);
  for (const name of report.declaredGaps) lines.push(`  gap:    ${name}`);
  for (const name of report.notVerifiedTests) lines.push(`  ${NOT_VERIFIED_NOTE}: ${name}`);
  for (const name of report.unclassified) lines.push(`  no clause id: ${name}`);
  return lines.join('\n');
}
