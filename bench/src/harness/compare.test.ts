import { describe, expect, it } from 'vitest';
import { evaluateTarget, evaluateTargets, marginOf, ratioOf, type Target } from './compare.js';
import type { SectionResult, TableResult } from './results.js';

const table: TableResult = {
  id: 'throughput',
  title: 'saves/s',
  metric: { unit: 'saves/s', higherIsBetter: true, format: 'rate' },
  subject: 'Keepsake',
  caseHeader: 'history',
  cases: [
    {
      key: '10',
      label: '10 messages',
      x: 10,
      measurements: [
        { contender: 'Keepsake', samples: [100, 90, 110] },
        { contender: 'loop', samples: [100, 100, 100] },
      ],
    },
    {
      key: '10000',
      label: '10,000 messages',
      x: 10_000,
      measurements: [
        { contender: 'Keepsake', samples: [60, 40, 50] },
        { contender: 'loop', samples: [2, 2.5, 2] },
      ],
    },
  ],
};

const target = (overrides: Partial<Target>): Target => ({
  id: 'test',
  description: 'test target',
  section: 'save',
  table: 'throughput',
  cases: ['10', '10000'],
  reference: { contender: 'loop' },
  comparator: '>=',
  threshold: 0.9,
  ...overrides,
});

describe('ratioOf', () => {
  it('divides the medians and takes the range from the rounds paired', () => {
    const ratio = ratioOf(
      { contender: 'a', samples: [100, 90, 110] },
      { contender: 'b', samples: [100, 100, 50] },
      true,
    );
    expect(ratio.value).toBeCloseTo(1);
    expect(ratio.min).toBeCloseTo(0.9);
    expect(ratio.max).toBeCloseTo(2.2);
  });

  it('takes the range from the extremes when the figures were not measured together', () => {
    const ratio = ratioOf(
      { contender: 'a', samples: [10, 20, 30] },
      { contender: 'b', samples: [5, 10] },
      false,
    );
    expect(ratio.min).toBeCloseTo(1);
    expect(ratio.max).toBeCloseTo(6);
  });
});

describe('marginOf', () => {
  it('is positive when an at-least target is met and negative when missed', () => {
    expect(marginOf(1.8, '>=', 0.9)).toBeCloseTo(1);
    expect(marginOf(0.72, '>=', 0.9)).toBeCloseTo(-0.2);
  });

  it('reads an at-most target the other way round', () => {
    expect(marginOf(1.5, '<=', 2)).toBeCloseTo(1 / 3);
    expect(marginOf(2.5, '<=', 2)).toBeCloseTo(-0.2);
  });
});

describe('evaluateTarget', () => {
  it('evaluates each case the target names against the same case of the reference', () => {
    const [short, long] = evaluateTarget(target({}), table);
    expect(short?.caseKey).toBe('10');
    expect(short?.ratio.value).toBeCloseTo(1);
    expect(short?.met).toBe(true);
    expect(long?.ratio.value).toBeCloseTo(25);
  });

  it('marks a target as missed with the shortfall as margin', () => {
    const [evaluation] = evaluateTarget(target({ cases: ['10'], threshold: 1.25 }), table);
    expect(evaluation?.met).toBe(false);
    expect(evaluation?.margin).toBeCloseTo(-0.2);
  });

  it('compares Keepsake with itself in another case (history length does not slow a save)', () => {
    const [evaluation] = evaluateTarget(
      target({
        cases: ['10000'],
        reference: { contender: 'Keepsake', caseKey: '10' },
        threshold: 0.5,
      }),
      table,
    );
    expect(evaluation?.ratio.value).toBeCloseTo(0.5);
    expect(evaluation?.met).toBe(true);
    expect(evaluation?.ratio.min).toBeCloseTo(40 / 110);
  });

  it('skips cases that were not measured rather than inventing a ratio', () => {
    expect(evaluateTarget(target({ cases: ['100'] }), table)).toEqual([]);
  });
});

describe('evaluateTargets', () => {
  it('ignores targets of sections that did not run', () => {
    const section: SectionResult = {
      id: 'save',
      title: 'save',
      summary: '',
      tables: [table],
      notes: [],
    };
    const evaluations = evaluateTargets([target({}), target({ section: 'journal' })], [section]);
    expect(evaluations.map((evaluation) => evaluation.target.section)).toEqual(['save', 'save']);
  });
});
