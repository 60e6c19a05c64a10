import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { InvalidConfigError } from '@keepsake/core';

/**
 * One adapter the clause report runs: the directory whose vitest setup runs its test
 * file (its package), and the test file that calls `runConformance`.
 */
export interface ReportedAdapter {
  name: string;
  /** Absolute; the config file gives it relative to itself. */
  directory: string;
  /** Relative to `directory`. */
  testFile: string;
}

/**
 * Reads `report-adapters.json`: `{ "adapters": [{ "name", "directory", "testFile" }] }`,
 * directories relative to the file. Adapter packages of this repo add themselves there.
 */
export async function readAdaptersConfig(file: string): Promise<ReportedAdapter[]> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(file, 'utf8'));
  } catch (cause) {
    throw new InvalidConfigError(`Cannot read the adapter list ${file}`, { cause });
  }
  const adapters = (parsed as { adapters?: unknown }).adapters;
  if (!Array.isArray(adapters)) {
    throw new InvalidConfigError(
      `${file} must hold { "adapters": [{ "name", "directory", "testFile" }] }`,
    );
  }
  return adapters.map((entry: unknown, index) => {
    const { name, directory, testFile } = (entry ?? {}) as Record<string, unknown>;
    if (typeof name !== 'string' || typeof directory !== 'string' || typeof testFile !== 'string') {
      throw new InvalidConfigError(
        `${file}: adapters[${index}] needs string fields "name", "directory" and "testFile"`,
      );
    }
    return { name, directory: resolve(dirname(file), directory), testFile };
  });
}
