import type { BenchConfig } from '../config.js';
import type { TargetEvaluation } from '../harness/compare.js';
import type { MachineInfo } from '../harness/machine.js';
import type { SectionResult } from '../harness/results.js';

/** Everything one run produced, rendered to Markdown and saved as JSON beside it. */
export interface RunReport {
  readonly startedAt: string;
  readonly mode: BenchConfig['mode'];
  readonly rounds: BenchConfig['rounds'];
  readonly durationMs: number;
  readonly machine: MachineInfo;
  readonly sections: readonly SectionResult[];
  readonly evaluations: readonly TargetEvaluation[];
  /** Sections that crashed, with the error: the run goes on, the report says so. */
  readonly failures: ReadonlyArray<{ readonly section: string; readonly error: string }>;
}
