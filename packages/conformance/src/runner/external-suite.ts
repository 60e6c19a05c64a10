/**
 * The test file `keepsake-conformance` hands to vitest: it imports the adapter author's
 * initializer (its default export) and registers the whole suite for it. The file and
 * the options arrive through environment variables set by the bin.
 */
import { isAbsolute } from 'node:path';
import { pathToFileURL } from 'node:url';
import { InvalidConfigError } from '@keepsake/core';
import { runConformance } from '../index.js';
import type { ConformanceInitializer, ConformanceOptions } from '../types.js';

export const INITIALIZER_ENV = 'KEEPSAKE_CONFORMANCE_INITIALIZER';
export const OPTIONS_ENV = 'KEEPSAKE_CONFORMANCE_OPTIONS';

const file = process.env[INITIALIZER_ENV];
if (file === undefined || !isAbsolute(file)) {
  throw new InvalidConfigError(
    `Set ${INITIALIZER_ENV} to the absolute path of a module whose default export is a ConformanceInitializer (the keepsake-conformance bin does this)`,
  );
}
const imported = (await import(pathToFileURL(file).href)) as { default?: unknown };
const initializer = imported.default as ConformanceInitializer | undefined;
if (
  typeof initializer !== 'object' ||
  initializer === null ||
  typeof initializer.name !== 'string' ||
  typeof initializer.createAdapter !== 'function'
) {
  throw new InvalidConfigError(
    `${file} must export default an initializer { name, createAdapter(namespace), setup?, teardown?, releaseAdapter?, destroyNamespace?, simulateCrash? }`,
  );
}
const options = JSON.parse(process.env[OPTIONS_ENV] ?? '{}') as ConformanceOptions;
runConformance({ initializerModule: file, ...initializer }, options);
