/** How the figures of one table are counted and printed. */
export interface Metric {
  /** Printed after each figure, e.g. "saves/s", "ms", "KiB". */
  readonly unit: string;
  /** Throughput: higher is better; time and memory: lower is better. */
  readonly higherIsBetter: boolean;
  /** How a figure is printed: a rate (3 significant digits), milliseconds or bytes. */
  readonly format: 'rate' | 'milliseconds' | 'bytes';
}

/** The measured rounds of one contender in one case, in round order (warm-up excluded). */
export interface Measurement {
  readonly contender: string;
  readonly samples: readonly number[];
}

/** One point of a table: a history length, a number of streams, a count of sessions. */
export interface CaseResult {
  /** Stable key targets refer to, e.g. "10000". */
  readonly key: string;
  /** Printed in the report, e.g. "10,000 messages". */
  readonly label: string;
  /** Position on a chart's x axis. */
  readonly x: number;
  readonly measurements: readonly Measurement[];
}

export interface ChartRequest {
  /** File name under the results directory, e.g. "durable-save.svg". */
  readonly file: string;
  readonly title: string;
  readonly xTitle: string;
}

/** One metric measured across cases, every contender side by side. */
export interface TableResult {
  readonly id: string;
  readonly title: string;
  readonly metric: Metric;
  /** The contender the ratios are about: Keepsake. */
  readonly subject: string;
  /** Header of the case column, e.g. "history". */
  readonly caseHeader: string;
  readonly cases: readonly CaseResult[];
  readonly chart?: ChartRequest;
}

export interface SectionResult {
  readonly id: string;
  readonly title: string;
  /** One paragraph: what is measured and how the contenders differ. */
  readonly summary: string;
  readonly tables: readonly TableResult[];
  /** Facts a reader needs to trust the figures (sizes, concurrency, durability of each contender). */
  readonly notes: readonly string[];
  /** Set when the section did not run, with the reason (a backend that is not configured). */
  readonly skipped?: string;
}

export function findMeasurement(
  table: TableResult,
  caseKey: string,
  contender: string,
): Measurement | undefined {
  return table.cases
    .find((entry) => entry.key === caseKey)
    ?.measurements.find((measurement) => measurement.contender === contender);
}
