import type { BenchConfig } from '../config.js';
import type { Progress } from '../harness/progress.js';
import type { SectionResult } from '../harness/results.js';
import type { Workspace } from '../harness/workspace.js';

export interface SectionContext {
  readonly config: BenchConfig;
  readonly workspace: Workspace;
  readonly progress: Progress;
}

/**
 * One section of the report: a backend's operation measured against its baselines. A
 * section for another backend (Redis, S3) implements the same interface in its own folder
 * next to `fs/` and is listed in `registry.ts`.
 */
export interface Section {
  readonly id: string;
  readonly title: string;
  /** The backend the section measures: "fs" now, "redis" and "s3" when they exist. */
  readonly backend: string;
  /** Trials the section will run, so the progress bar knows the whole run. */
  plannedTrials(config: BenchConfig): number;
  /**
   * Null when the section can run here; otherwise why not (a server URL that is not set).
   * A section that cannot run is reported as skipped, not failed.
   */
  unavailableReason(): string | null;
  run(context: SectionContext): Promise<SectionResult>;
}

export function trialsPerCase(config: BenchConfig, contenders: number): number {
  return contenders * (config.rounds.warmupRounds + config.rounds.rounds);
}
