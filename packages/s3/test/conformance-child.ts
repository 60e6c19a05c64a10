/**
 * The conformance suite's initializer for its real second processes (H1's second process,
 * E2's randomized process kills): what `initializerModule` names. The same layout as
 * `conformance.test.ts` (a namespace is the prefix `conformance/<namespace>`), on the S3 that
 * file started, described in the environment the child inherits. It imports the built
 * package, so plain Node runs it (types stripped) without a bundler.
 */
import { S3Client } from '@aws-sdk/client-s3';
import type * as S3Package from '../src/index.js';
import type * as S3Testing from '../src/testing/index.js';

/**
 * The built package, imported when an adapter is made: its names are values, so typecheck
 * (which runs before the build) reads the types from the source instead.
 */
const PACKAGE = '@keepsake/s3';
const TESTING = '@keepsake/s3/testing';

export const TARGET_ENV = 'KEEPSAKE_S3_CONFORMANCE_TARGET';

/** What a child needs of the parent's S3 target. */
export interface ChildTarget {
  readonly endpoint: string;
  readonly region: string;
  readonly credentials: { readonly accessKeyId: string; readonly secretAccessKey: string };
  readonly bucket: string;
  readonly compatibility: 'standard' | 'ceph-rgw';
}

export function conformancePrefix(namespace: string): string {
  return `conformance/${namespace}`;
}

let client: S3Client | null = null;

export default {
  name: 's3',
  async createAdapter(namespace: string) {
    const text = process.env[TARGET_ENV];
    if (text === undefined) throw new TypeError(`${TARGET_ENV} is not set by the parent test`);
    const target = JSON.parse(text) as ChildTarget;
    const { s3Adapter } = (await import(PACKAGE)) as typeof S3Package;
    const { testClientConfig } = (await import(TESTING)) as typeof S3Testing;
    client ??= new S3Client(testClientConfig(target));
    return s3Adapter({
      client,
      bucket: target.bucket,
      prefix: conformancePrefix(namespace),
      compatibility: target.compatibility,
    });
  },
};
