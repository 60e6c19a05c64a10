import { ratioOf, type TargetEvaluation } from '../harness/compare.js';
import { formatElapsed } from '../harness/progress.js';
import type {
  CaseResult,
  Measurement,
  Metric,
  SectionResult,
  TableResult,
} from '../harness/results.js';
import { formatFigure, formatPercent, formatRatio, significant } from './format.js';
import type { RunReport } from './run-report.js';

/** The Markdown report: machine, targets at a glance, then one section per benchmark. */
export function renderMarkdown(report: RunReport): string {
  const lines: string[] = ['# Keepsake benchmarks', ''];
  lines.push(...renderRun(report), '');
  lines.push(...renderTargets(report.evaluations, report.sections), '');
  for (const failure of report.failures) {
    lines.push(`> **${failure.section} crashed:** ${failure.error.split('\n')[0]}`, '');
  }
  for (const section of report.sections) lines.push(...renderSection(section, report.evaluations));
  return `${lines.join('\n').trimEnd()}\n`;
}

function renderRun(report: RunReport): string[] {
  const { machine, rounds } = report;
  const mode =
    report.mode === 'quick' ? '`--quick` (smaller workloads, for a smoke check)' : 'full';
  return [
    `Run ${report.startedAt} · mode ${mode} · each figure is the median of ${rounds.rounds} ` +
      `rounds after ${rounds.warmupRounds} warm-up round${rounds.warmupRounds === 1 ? '' : 's'}, ` +
      `with min–max beside it · took ${formatElapsed(report.durationMs)}.`,
    '',
    '| machine | |',
    '|---|---|',
    `| CPUs | ${machine.cpuCount} × ${machine.cpuModel} |`,
    `| memory | ${machine.memoryGiB} GiB |`,
    `| OS | ${machine.platform}, kernel ${machine.kernel} |`,
    `| Node | ${machine.node}, libuv thread pool of ${machine.threadPoolSize} |`,
    `| scratch filesystem | ${machine.filesystem} |`,
    `| disk | ${significant(machine.fdatasyncPerSecond)} fdatasync/s (1 KiB appends to one file, one writer) |`,
    `| load average at start | ${machine.loadAverage.toFixed(2)} (work other than this run competing for the CPUs) |`,
    '',
    'Every contender runs in the same rounds, in rotated order, so noise on a shared machine ' +
      'lands on all of them alike; ratios are what to read, absolute figures vary from machine ' +
      'to machine.',
  ];
}

function renderTargets(
  evaluations: readonly TargetEvaluation[],
  sections: readonly SectionResult[],
): string[] {
  const met = evaluations.filter((evaluation) => evaluation.met).length;
  const lines = [
    '## Targets',
    '',
    `${met} of ${evaluations.length} met.`,
    '',
    '| target | case | measured against | ratio (min–max across rounds) | result |',
    '|---|---|---|---|---|',
  ];
  for (const evaluation of evaluations) {
    lines.push(
      `| ${evaluation.target.description} | ${caseLabel(sections, evaluation)} | ` +
        `${referenceLabel(sections, evaluation)} | ` +
        `${formatRatioRange(evaluation.ratio)} | ${verdict(evaluation)} |`,
    );
  }
  return lines;
}

function caseLabel(sections: readonly SectionResult[], evaluation: TargetEvaluation): string {
  const table = findTable(sections, evaluation.target.section, evaluation.target.table);
  return (
    table?.cases.find((entry) => entry.key === evaluation.caseKey)?.label ?? evaluation.caseKey
  );
}

/** The figure a target is measured against: a baseline, or Keepsake itself in another case. */
function referenceLabel(sections: readonly SectionResult[], evaluation: TargetEvaluation): string {
  const { contender, caseKey } = evaluation.target.reference;
  if (caseKey === undefined) return contender;
  const table = findTable(sections, evaluation.target.section, evaluation.target.table);
  const label = table?.cases.find((entry) => entry.key === caseKey)?.label ?? caseKey;
  return `${contender} at ${label}`;
}

function findTable(
  sections: readonly SectionResult[],
  sectionId: string,
  tableId: string,
): TableResult | undefined {
  return sections
    .find((section) => section.id === sectionId)
    ?.tables.find((table) => table.id === tableId);
}

export function verdict(evaluation: TargetEvaluation): string {
  return evaluation.met
    ? `✅ met, ${formatPercent(evaluation.margin)} to spare`
    : `❌ missed by ${formatPercent(evaluation.margin)}`;
}

export function formatRatioRange(ratio: { value: number; min: number; max: number }): string {
  return `${formatRatio(ratio.value)} (${formatRatio(ratio.min)}–${formatRatio(ratio.max)})`;
}

function renderSection(section: SectionResult, evaluations: readonly TargetEvaluation[]): string[] {
  const lines = [`## ${section.title}`, ''];
  if (section.skipped !== undefined) return [...lines, `Skipped: ${section.skipped}`, ''];
  lines.push(section.summary, '');
  for (const table of section.tables) {
    const own = evaluations.filter(
      (evaluation) =>
        evaluation.target.section === section.id && evaluation.target.table === table.id,
    );
    lines.push(...renderTable(table, own), '');
  }
  if (section.notes.length > 0) {
    lines.push(...section.notes.map((note) => `- ${note}`), '');
  }
  return lines;
}

/** Rows: one per case and baseline, plus one per target measured against another case. */
export function renderTable(
  table: TableResult,
  evaluations: readonly TargetEvaluation[],
): string[] {
  const better = table.metric.higherIsBetter ? 'above 1' : 'below 1';
  const lines = [`### ${table.title}`, ''];
  if (table.chart) lines.push(`![${table.chart.title}](${table.chart.file})`, '');
  lines.push(
    `Ratio = ${table.subject} ÷ baseline, in ${table.metric.unit} (${better}: ${table.subject} is better).`,
    '',
    `| ${table.caseHeader} | ${table.subject} | baseline | baseline figure | ratio (min–max) | target | result |`,
    '|---|---|---|---|---|---|---|',
  );
  for (const entry of table.cases) {
    const subject = entry.measurements.find(
      (measurement) => measurement.contender === table.subject,
    );
    if (!subject) continue;
    for (const reference of entry.measurements) {
      if (reference.contender === table.subject) continue;
      const evaluation = evaluations.find(
        (candidate) =>
          candidate.caseKey === entry.key &&
          candidate.target.reference.contender === reference.contender &&
          (candidate.target.reference.caseKey ?? entry.key) === entry.key,
      );
      lines.push(
        row(table.metric, entry, subject, reference.contender, reference, true, evaluation),
      );
    }
    for (const evaluation of evaluations) {
      const referenceCase = evaluation.target.reference.caseKey;
      if (
        evaluation.caseKey !== entry.key ||
        referenceCase === undefined ||
        referenceCase === entry.key
      ) {
        continue;
      }
      const other = table.cases.find((candidate) => candidate.key === referenceCase);
      const reference = other?.measurements.find(
        (measurement) => measurement.contender === evaluation.target.reference.contender,
      );
      if (!other || !reference) continue;
      const name = `${reference.contender} at ${other.label}`;
      lines.push(row(table.metric, entry, subject, name, reference, false, evaluation));
    }
  }
  return lines;
}

function row(
  metric: Metric,
  entry: CaseResult,
  subject: Measurement,
  referenceName: string,
  reference: Measurement,
  paired: boolean,
  evaluation: TargetEvaluation | undefined,
): string {
  const ratio = evaluation?.ratio ?? ratioOf(subject, reference, paired);
  const target = evaluation
    ? `${evaluation.target.comparator === '>=' ? '≥' : '≤'} ${formatRatio(evaluation.target.threshold)}`
    : '—';
  return (
    `| ${entry.label} | ${figure(metric, subject)} | ${referenceName} | ${figure(metric, reference)} | ` +
    `${formatRatioRange(ratio)} | ${target} | ${evaluation ? verdict(evaluation) : '—'} |`
  );
}

function figure(metric: Metric, measurement: Measurement): string {
  return formatFigure(metric, measurement.samples);
}
