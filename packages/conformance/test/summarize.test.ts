import { expect, it } from 'vitest';
import { CLAUSE_IDS } from '../src/clauses.js';
import { formatReport, summarize } from '../src/report/summarize.js';

it('folds vitest JSON results into per-clause counts, gaps and failures', () => {
  const report = summarize('example', 'test/example.test.ts', {
    testResults: [
      {
        name: 'test/example.test.ts',
        status: 'failed',
        assertionResults: [
          { title: 'B4: one conflicts', fullName: 'x B4: one conflicts', status: 'passed' },
          {
            title: 'B4: nothing overwritten',
            fullName: 'x B4: nothing overwritten',
            status: 'failed',
          },
          { title: 'B3: declared gap — no fsync here', fullName: 'x B3', status: 'passed' },
          { title: 'C3:model: declared gap — too slow', fullName: 'x C3:model', status: 'passed' },
          { title: 'helper without a clause', fullName: 'x helper', status: 'passed' },
        ],
      },
    ],
  });
  expect(report.clauses.B4).toEqual({
    passed: 1,
    failed: 1,
    declaredGap: 0,
    notVerified: 0,
    skipped: 0,
  });
  expect(report.clauses.B3).toEqual({
    passed: 0,
    failed: 0,
    declaredGap: 1,
    notVerified: 0,
    skipped: 0,
  });
  expect(report.clauses.C3.declaredGap).toBe(1);
  expect(report.clauses.H3).toEqual({
    passed: 0,
    failed: 0,
    declaredGap: 0,
    notVerified: 0,
    skipped: 0,
  });
  expect(report.failedTests).toEqual(['B4: nothing overwritten']);
  expect(report.unclassified).toEqual(['x helper']);
  const text = formatReport(report);
  expect(text).toContain('H3           0       0    0           0  no test ran');
  // One row per clause of the contract, in its order, whether or not a test ran.
  const rows = text.split('\n').filter((line) => /^[A-H][0-9]+ /.test(line));
  expect(rows.map((line) => line.split(' ')[0])).toEqual([...CLAUSE_IDS]);
  expect(CLAUSE_IDS).toContain('E8');
});

it('counts a durability test that ran without crash simulation as not verified, not passed', () => {
  const report = summarize('no-crash', 'test/x.test.ts', {
    testResults: [
      {
        name: 'test/x.test.ts',
        status: 'passed',
        assertionResults: [
          {
            title: 'B3: a durable save survives a crash',
            fullName: 'x B3: a durable save survives a crash',
            status: 'passed',
            meta: { keepsakeNotVerified: 'not verified (no crash simulation)' },
          },
          {
            title: 'B3: fsync asks for durability',
            fullName: 'x B3: b',
            status: 'passed',
            meta: {},
          },
        ],
      },
    ],
  });
  expect(report.clauses.B3).toEqual({
    passed: 1,
    failed: 0,
    declaredGap: 0,
    notVerified: 1,
    skipped: 0,
  });
  expect(report.notVerifiedTests).toEqual(['B3: a durable save survives a crash']);
  expect(formatReport(report)).toContain(
    'not verified (no crash simulation): B3: a durable save survives a crash',
  );
});
