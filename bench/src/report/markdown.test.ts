import { describe, expect, it } from 'vitest';
import { evaluateTargets, type Target } from '../harness/compare.js';
import type { SectionResult } from '../harness/results.js';
import { renderMarkdown } from './markdown.js';
import type { RunReport } from './run-report.js';

const section: SectionResult = {
  id: 'fs-durable-save',
  title: 'fs: durable save',
  summary: 'One message appended and saved durably.',
  tables: [
    {
      id: 'throughput',
      title: 'Durable saves per second',
      metric: { unit: 'saves/s', higherIsBetter: true, format: 'rate' },
      subject: 'Keepsake (fs)',
      caseHeader: 'history',
      chart: { file: 'durable-save.svg', title: 'saves/s vs history', xTitle: 'messages' },
      cases: [
        {
          key: '10',
          label: '10 messages',
          x: 10,
          measurements: [
            { contender: 'Keepsake (fs)', samples: [1_000, 900, 1_100] },
            { contender: 'hand-written loop', samples: [900, 900, 900] },
          ],
        },
        {
          key: '10000',
          label: '10,000 messages',
          x: 10_000,
          measurements: [
            { contender: 'Keepsake (fs)', samples: [400, 400, 400] },
            { contender: 'hand-written loop', samples: [20, 20, 20] },
          ],
        },
      ],
    },
  ],
  notes: ['Baselines have no index.'],
};

const targets: Target[] = [
  {
    id: 'vs-loop',
    description: 'durable save ≥ 0.9× the hand-written loop',
    section: 'fs-durable-save',
    table: 'throughput',
    cases: ['10'],
    reference: { contender: 'hand-written loop' },
    comparator: '>=',
    threshold: 0.9,
  },
  {
    id: 'flat',
    description: 'a 10,000-message save ≤ 2× a 10-message save',
    section: 'fs-durable-save',
    table: 'throughput',
    cases: ['10000'],
    reference: { contender: 'Keepsake (fs)', caseKey: '10' },
    comparator: '>=',
    threshold: 0.5,
  },
];

function report(overrides: Partial<RunReport> = {}): RunReport {
  const sections = [section];
  return {
    startedAt: '2025-01-01T00:00:00Z',
    mode: 'full',
    rounds: { warmupRounds: 1, rounds: 3 },
    durationMs: 65_000,
    machine: {
      cpuCount: 2,
      cpuModel: 'Test CPU',
      memoryGiB: 24,
      platform: 'linux x64',
      kernel: '6.0',
      node: 'v24.0.0',
      threadPoolSize: 4,
      filesystem: 'ext4 on /dev/vda (mounted at /)',
      loadAverage: 1.5,
      fdatasyncPerSecond: 2_300,
    },
    sections,
    evaluations: evaluateTargets(targets, sections),
    failures: [],
    ...overrides,
  };
}

describe('renderMarkdown', () => {
  it('states the machine, the filesystem and how figures were taken', () => {
    const markdown = renderMarkdown(report());
    expect(markdown).toContain('| CPUs | 2 × Test CPU |');
    expect(markdown).toContain('| scratch filesystem | ext4 on /dev/vda (mounted at /) |');
    expect(markdown).toContain('| disk | 2,300 fdatasync/s');
    expect(markdown).toContain('median of 3 rounds after 1 warm-up round');
    expect(markdown).toContain('took 1m05s');
  });

  it('lists every target with its ratio, range and verdict', () => {
    const markdown = renderMarkdown(report());
    expect(markdown).toContain('1 of 2 met.');
    expect(markdown).toContain(
      '| durable save ≥ 0.9× the hand-written loop | 10 messages | hand-written loop | 1.11× (1.00×–1.22×) | ✅ met, 23% to spare |',
    );
    // A target against Keepsake itself in another case names that case.
    expect(markdown).toContain(
      '| a 10,000-message save ≤ 2× a 10-message save | 10,000 messages | Keepsake (fs) at 10 messages | 0.40× (0.36×–0.44×) | ❌ missed by 20% |',
    );
  });

  it('prints a row per baseline with median, min–max, ratio, target and result', () => {
    const markdown = renderMarkdown(report());
    expect(markdown).toContain(
      '| 10 messages | 1,000 saves/s (900–1,100) | hand-written loop | 900 saves/s (900–900) | 1.11× (1.00×–1.22×) | ≥ 0.90× | ✅ met, 23% to spare |',
    );
    expect(markdown).toContain(
      '| 10,000 messages | 400 saves/s (400–400) | hand-written loop | 20.0 saves/s (20.0–20.0) | 20.0× (20.0×–20.0×) | — | — |',
    );
  });

  it('adds a row for a target measured against Keepsake in another case', () => {
    expect(renderMarkdown(report())).toContain(
      '| 10,000 messages | 400 saves/s (400–400) | Keepsake (fs) at 10 messages | 1,000 saves/s (900–1,100) | 0.40× (0.36×–0.44×) | ≥ 0.50× | ❌ missed by 20% |',
    );
  });

  it('links the chart and says which way the ratio is better', () => {
    const markdown = renderMarkdown(report());
    expect(markdown).toContain('![saves/s vs history](durable-save.svg)');
    expect(markdown).toContain('(above 1: Keepsake (fs) is better)');
    expect(markdown).toContain('- Baselines have no index.');
  });

  it('reports skipped sections and crashed ones instead of leaving them out', () => {
    const skipped: SectionResult = {
      id: 'redis-save',
      title: 'redis: durable save',
      summary: '',
      tables: [],
      notes: [],
      skipped: 'KEEPSAKE_BENCH_REDIS_URL is not set',
    };
    const markdown = renderMarkdown(
      report({
        sections: [section, skipped],
        failures: [{ section: 'fs-recovery', error: 'Error: disk full\n    at stack' }],
      }),
    );
    expect(markdown).toContain('Skipped: KEEPSAKE_BENCH_REDIS_URL is not set');
    expect(markdown).toContain('> **fs-recovery crashed:** Error: disk full');
    expect(markdown).not.toContain('at stack');
  });
});
