import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { renderChart } from './charts.js';
import { renderMarkdown } from './markdown.js';
import type { RunReport } from './run-report.js';

/** Writes latest.md, latest.json (every sample) and one SVG per chart; returns the paths. */
export async function writeReport(report: RunReport, directory: string): Promise<string[]> {
  await mkdir(directory, { recursive: true });
  const written: string[] = [];
  for (const section of report.sections) {
    for (const table of section.tables) {
      if (!table.chart || table.cases.length === 0) continue;
      const path = join(directory, table.chart.file);
      await writeFile(path, await renderChart(table));
      written.push(path);
    }
  }
  const markdown = join(directory, 'latest.md');
  await writeFile(markdown, renderMarkdown(report));
  const json = join(directory, 'latest.json');
  await writeFile(json, `${JSON.stringify(report, null, 2)}\n`);
  return [markdown, json, ...written];
}
