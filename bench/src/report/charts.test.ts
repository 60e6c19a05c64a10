import { describe, expect, it } from 'vitest';
import type { TableResult } from '../harness/results.js';
import { renderChart } from './charts.js';

const table: TableResult = {
  id: 'throughput',
  title: 'appends/s',
  metric: { unit: 'appends/s', higherIsBetter: true, format: 'rate' },
  subject: 'Keepsake (fs)',
  caseHeader: 'streams',
  chart: { file: 'journal.svg', title: 'Durable appends vs streams', xTitle: 'concurrent streams' },
  cases: [1, 16, 100].map((streams) => ({
    key: String(streams),
    label: `${streams} streams`,
    x: streams,
    measurements: [
      { contender: 'Keepsake (fs)', samples: [streams * 100, streams * 120] },
      { contender: 'raw group-commit loop', samples: [streams * 110, streams * 130] },
    ],
  })),
};

describe('renderChart', () => {
  it('renders a standalone SVG with the title, axis and a legend entry per contender', async () => {
    const svg = await renderChart(table);
    expect(svg.startsWith('<svg')).toBe(true);
    expect(svg).toContain('Durable appends vs streams');
    expect(svg).toContain('concurrent streams');
    expect(svg).toContain('Keepsake (fs)');
    expect(svg).toContain('raw group-commit loop');
  });
});
