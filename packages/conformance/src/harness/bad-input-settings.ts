import { InvalidConfigError } from '@keepsake/core';

/**
 * How many inputs each bad-input property tries, and from which seed. fast-check prints the
 * seed and the path of every failure; these variables replay it or soak longer without a
 * code change:
 * - KEEPSAKE_BAD_INPUT_RUNS: inputs per property (a positive integer, default 20);
 * - KEEPSAKE_BAD_INPUT_SEED: fast-check's seed (an integer; random when unset);
 * - KEEPSAKE_BAD_INPUT_PATH: the path printed with a failure, to replay exactly that
 *   counterexample (with `-t` selecting the failing test).
 */
export interface BadInputSettings {
  readonly numRuns: number;
  readonly seed?: number;
  readonly path?: string;
}

export const DEFAULT_BAD_INPUT_RUNS = 20;

export function badInputSettings(environment: NodeJS.ProcessEnv = process.env): BadInputSettings {
  const runs = integerVariable(environment, 'KEEPSAKE_BAD_INPUT_RUNS');
  if (runs !== undefined && runs < 1) {
    throw new InvalidConfigError(`KEEPSAKE_BAD_INPUT_RUNS must be a positive integer, got ${runs}`);
  }
  const seed = integerVariable(environment, 'KEEPSAKE_BAD_INPUT_SEED');
  const path = environment.KEEPSAKE_BAD_INPUT_PATH?.trim() || undefined;
  if (path !== undefined && !/^\d+(:\d+)*$/.test(path)) {
    throw new InvalidConfigError(
      `KEEPSAKE_BAD_INPUT_PATH must be a fast-check path like "3:1:0", got ${JSON.stringify(path)}`,
    );
  }
  return {
    numRuns: runs ?? DEFAULT_BAD_INPUT_RUNS,
    ...(seed === undefined ? {} : { seed }),
    ...(path === undefined ? {} : { path }),
  };
}

function integerVariable(environment: NodeJS.ProcessEnv, name: string): number | undefined {
  const text = environment[name]?.trim();
  if (text === undefined || text === '') return undefined;
  const value = Number(text);
  if (!Number.isSafeInteger(value)) {
    throw new InvalidConfigError(`${name} must be an integer, got ${JSON.stringify(text)}`);
  }
  return value;
}
