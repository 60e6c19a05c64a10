/**
 * The conformance suite's initializer for its real second processes (H1's second process,
 * E2's randomized process kills): what `initializerModule` names. The same layout as the
 * first suite of `conformance.test.ts`, one subdirectory per namespace of the temp directory
 * that file made, named in the environment the child inherits. It imports the built
 * package, so plain Node runs it (types stripped) without a bundler.
 */
import { join } from 'node:path';
import type * as FsPackage from '../src/index.js';

/**
 * The built package, imported when an adapter is made: its name is a value, so typecheck
 * (which runs before the build) reads the types from the source instead.
 */
const PACKAGE = '@keepsake/fs';

export const ROOT_ENV = 'KEEPSAKE_FS_CONFORMANCE_ROOT';

export default {
  name: 'fs',
  async createAdapter(namespace: string) {
    const root = process.env[ROOT_ENV];
    if (root === undefined) throw new TypeError(`${ROOT_ENV} is not set by the parent test`);
    const { fsAdapter } = (await import(PACKAGE)) as typeof FsPackage;
    return fsAdapter({ directory: join(root, namespace) });
  },
};
