import { parse, View } from 'vega';
import { compile, type TopLevelSpec } from 'vega-lite';
import type { TableResult } from '../harness/results.js';
import { summarize } from '../harness/stats.js';

interface Point {
  readonly x: number;
  readonly contender: string;
  readonly median: number;
  readonly min: number;
  readonly max: number;
}

/**
 * A line per contender across the table's cases (history length, concurrent streams), a
 * bar from min to max at each point so the noise is visible; log scales, since contenders
 * differ by orders of magnitude.
 */
export function chartSpec(table: TableResult): TopLevelSpec {
  const points: Point[] = table.cases.flatMap((entry) =>
    entry.measurements.map((measurement) => {
      const summary = summarize(measurement.samples);
      return { x: entry.x, contender: measurement.contender, ...summary };
    }),
  );
  const title = table.chart?.title ?? table.title;
  const xTitle = table.chart?.xTitle ?? table.caseHeader;
  const x = {
    field: 'x',
    type: 'quantitative',
    scale: { type: 'log' },
    title: xTitle,
    axis: { values: table.cases.map((entry) => entry.x), format: ',' },
  } as const;
  const color = {
    field: 'contender',
    type: 'nominal',
    title: null,
    sort: table.cases[0]?.measurements.map((measurement) => measurement.contender) ?? [],
  } as const;
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: {
      text: title,
      subtitle: `median of each contender, bars from min to max · ${table.metric.unit}`,
    },
    width: 560,
    height: 340,
    background: 'white',
    data: { values: points },
    layer: [
      {
        mark: { type: 'rule', strokeWidth: 2, opacity: 0.6 },
        encoding: {
          x,
          y: { field: 'min', type: 'quantitative', scale: { type: 'log' } },
          y2: { field: 'max' },
          color,
        },
      },
      {
        mark: { type: 'line', point: true },
        encoding: {
          x,
          y: {
            field: 'median',
            type: 'quantitative',
            scale: { type: 'log' },
            title: table.metric.unit,
            axis: { format: '~s' },
          },
          color,
          tooltip: [
            { field: 'contender' },
            { field: 'x', title: xTitle },
            { field: 'median', format: ',.0f' },
          ],
        },
      },
    ],
    config: { legend: { orient: 'bottom', columns: 2, labelLimit: 0 }, font: 'sans-serif' },
  } as TopLevelSpec;
}

/** Renders a table's chart to an SVG string with vega's headless renderer (no browser). */
export async function renderChart(table: TableResult): Promise<string> {
  const vegaSpec = compile(chartSpec(table)).spec;
  const view = new View(parse(vegaSpec), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}
