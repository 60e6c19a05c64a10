#!/usr/bin/env node
import { parseCliOptions, USAGE } from './cli-options.js';
import { benchConfig } from './config.js';
import { evaluateTargets } from './harness/compare.js';
import { describeMachine } from './harness/machine.js';
import { formatElapsed, Progress } from './harness/progress.js';
import type { SectionResult } from './harness/results.js';
import { removeAbandonedRuns, Workspace } from './harness/workspace.js';
import { verdict } from './report/markdown.js';
import type { RunReport } from './report/run-report.js';
import { writeReport } from './report/write-report.js';
import { sections } from './sections/registry.js';
import { targets } from './targets.js';

/**
 * `pnpm bench`: runs every section, evaluates the targets, writes the report. Exits non-zero
 * only when a section crashed; a missed target is a finding for the report, not a failure.
 */
async function main(): Promise<number> {
  let options: ReturnType<typeof parseCliOptions>;
  try {
    options = parseCliOptions(process.argv.slice(2));
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (options.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const config = benchConfig(options.mode);
  const selected = sections.filter(
    (section) =>
      options.only.length === 0 || options.only.some((word) => section.id.includes(word)),
  );
  if (selected.length === 0) {
    process.stderr.write(`no section matches --only ${options.only.join(',')}\n\n${USAGE}`);
    return 2;
  }

  const startedAt = new Date();
  const progress = new Progress();
  await removeAbandonedRuns(options.scratchDirectory);
  const workspace = new Workspace(options.scratchDirectory);
  await workspace.open();
  const results: SectionResult[] = [];
  const failures: Array<{ section: string; error: string }> = [];
  try {
    progress.keep(`Keepsake benchmarks (${options.mode}), scratch files in ${workspace.root}`);
    const machine = await describeMachine(workspace.root);
    progress.keep(
      `${machine.cpuCount} CPUs · ${machine.filesystem} · ${machine.fdatasyncPerSecond} fdatasync/s · load ${machine.loadAverage.toFixed(2)}`,
    );
    const runnable = selected.filter((section) => section.unavailableReason() === null);
    for (const section of runnable) progress.plan(section.plannedTrials(config));
    for (const section of selected) {
      const reason = section.unavailableReason();
      if (reason !== null) {
        progress.keep(`▷ ${section.title}: skipped (${reason})`);
        results.push({
          id: section.id,
          title: section.title,
          summary: '',
          tables: [],
          notes: [],
          skipped: reason,
        });
        continue;
      }
      progress.beginSection(section.title);
      const sectionStarted = performance.now();
      try {
        results.push(await section.run({ config, workspace, progress }));
        progress.keep(`  (${formatElapsed(performance.now() - sectionStarted)})`);
      } catch (error) {
        const text = error instanceof Error ? (error.stack ?? error.message) : String(error);
        failures.push({ section: section.id, error: text });
        progress.keep(`✖ ${section.title} crashed:\n${text}`);
      }
    }
    const evaluations = evaluateTargets(targets, results);
    const report: RunReport = {
      startedAt: startedAt.toISOString().replace(/\.\d+Z$/, 'Z'),
      mode: options.mode,
      rounds: config.rounds,
      durationMs: Date.now() - startedAt.getTime(),
      machine,
      sections: results,
      evaluations,
      failures,
    };
    const written = await writeReport(report, options.outputDirectory);
    progress.finish();
    for (const evaluation of evaluations) {
      process.stdout.write(
        `${verdict(evaluation)} · ${evaluation.target.description} · case ${evaluation.caseKey}\n`,
      );
    }
    process.stdout.write(`report: ${written.join(', ')}\n`);
  } finally {
    await workspace.close();
  }
  return failures.length > 0 ? 1 : 0;
}

process.exitCode = await main();
