import { InvalidConfigError } from '@keepsake/core';
import type { ProgramSize } from './arbitraries.js';

/**
 * How many runs the model-based tests make, and which: `modelRuns` from the suite options,
 * overridden by environment variables so a soak run or a reproduction needs no code change.
 * - KEEPSAKE_MODEL_RUNS: runs per test (a positive integer);
 * - KEEPSAKE_MODEL_SEED: fast-check's seed (an integer), printed with every failure;
 * - KEEPSAKE_MODEL_PATH: the path printed with a failure, to replay exactly that
 *   counterexample (use it with `-t` to select the failing test);
 * - KEEPSAKE_MODEL_SIZE: `small` (default) or `large` (soak: up to 20 sessions, longer
 *   streams with small real pauses);
 * - KEEPSAKE_MODEL_SHRINK_MS: how long a failure may be shrunk before it is reported
 *   (bounds only how small the counterexample gets; default 30 s, 120 s when large);
 * - KEEPSAKE_MODEL_RUN_TIMEOUT_MS: a run taking longer fails as a hang (default 60 s,
 *   300 s when large; a guard, never a performance assertion);
 * - KEEPSAKE_MODEL_TIMEOUT_MS: the timeout of each model-based test, by default enough for
 *   every run, the shrinking and one hung run.
 */
export interface ModelSettings {
  /** What to pass to fc.assert / fc.check. */
  readonly parameters: { numRuns: number; seed?: number; path?: string };
  readonly size: ProgramSize;
  readonly shrinkBudgetMs: number;
  readonly runTimeoutMs: number;
  readonly timeoutMs: number;
}

/** What one run may take on a loaded machine, to size the test's own timeout. */
const EXPECTED_RUN_MS: Record<ProgramSize, number> = { small: 5_000, large: 30_000 };
const SHRINK_BUDGET_MS: Record<ProgramSize, number> = { small: 30_000, large: 120_000 };
const RUN_TIMEOUT_MS: Record<ProgramSize, number> = { small: 60_000, large: 300_000 };

export function modelSettings(
  modelRuns: number,
  testTimeoutMs: number,
  environment: NodeJS.ProcessEnv = process.env,
): ModelSettings {
  const numRuns = positiveInteger(environment, 'KEEPSAKE_MODEL_RUNS') ?? modelRuns;
  const seed = integer(environment, 'KEEPSAKE_MODEL_SEED');
  const path = environment.KEEPSAKE_MODEL_PATH?.trim() || undefined;
  if (path !== undefined && !/^\d+(:\d+)*$/.test(path)) {
    throw new InvalidConfigError(
      `KEEPSAKE_MODEL_PATH must be a fast-check path like "3:1:0", got ${JSON.stringify(path)}`,
    );
  }
  const size = environment.KEEPSAKE_MODEL_SIZE?.trim() || 'small';
  if (size !== 'small' && size !== 'large') {
    throw new InvalidConfigError(
      `KEEPSAKE_MODEL_SIZE must be "small" or "large", got ${JSON.stringify(size)}`,
    );
  }
  const shrinkBudgetMs =
    positiveInteger(environment, 'KEEPSAKE_MODEL_SHRINK_MS') ?? SHRINK_BUDGET_MS[size];
  const runTimeoutMs =
    positiveInteger(environment, 'KEEPSAKE_MODEL_RUN_TIMEOUT_MS') ?? RUN_TIMEOUT_MS[size];
  const timeoutMs =
    positiveInteger(environment, 'KEEPSAKE_MODEL_TIMEOUT_MS') ??
    Math.max(testTimeoutMs, numRuns * EXPECTED_RUN_MS[size] + shrinkBudgetMs + 2 * runTimeoutMs);
  return {
    parameters: {
      numRuns,
      ...(seed === undefined ? {} : { seed }),
      ...(path === undefined ? {} : { path }),
    },
    size,
    shrinkBudgetMs,
    runTimeoutMs,
    timeoutMs,
  };
}

function integer(environment: NodeJS.ProcessEnv, name: string): number | undefined {
  const text = environment[name]?.trim();
  if (text === undefined || text === '') return undefined;
  const value = Number(text);
  if (!Number.isSafeInteger(value)) {
    throw new InvalidConfigError(`${name} must be an integer, got ${JSON.stringify(text)}`);
  }
  return value;
}

function positiveInteger(environment: NodeJS.ProcessEnv, name: string): number | undefined {
  const value = integer(environment, name);
  if (value !== undefined && value < 1) {
    throw new InvalidConfigError(`${name} must be a positive integer, got ${value}`);
  }
  return value;
}
