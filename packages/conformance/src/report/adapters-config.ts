import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
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
    const adapter = { name, directory: resolve(dirname(file), directory), testFile };
    assertRunnable(file, adapter);
    return adapter;
  });
}

/** The file name the report looks for in the working directory when no --config is given. */
export const PROJECT_CONFIG_FILE = 'keepsake-conformance-report.json';

/**
 * Issue 24: a listed adapter whose directory or test file is missing used to show as 45
 * "no test ran" rows and then `spawn … ENOENT`. It is refused up front, by name.
 */
function assertRunnable(file: string, adapter: ReportedAdapter): void {
  const testPath = join(adapter.directory, adapter.testFile);
  const missing = !existsSync(adapter.directory)
    ? `its directory ${adapter.directory} does not exist`
    : !existsSync(testPath)
      ? `its test file ${testPath} does not exist`
      : null;
  if (missing === null) return;
  throw new InvalidConfigError(
    `${file}: adapter "${adapter.name}" cannot run: ${missing}. List your own adapters in ${PROJECT_CONFIG_FILE} (or pass --config <file>); the README of @keepsake/conformance has a template`,
  );
}
