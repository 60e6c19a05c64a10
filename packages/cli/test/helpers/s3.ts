import { randomBytes } from 'node:crypto';
import type { StorageAdapter } from '@keepsake/core';
import { s3Adapter } from '@keepsake/s3';
import { containerEngineAvailable, type S3Target, startS3Target } from '@keepsake/s3/testing';

/**
 * The S3 a test file uses: KEEPSAKE_TEST_S3_ENDPOINT when set, else what the harness of
 * @keepsake/s3 starts (a throwaway single-node Ceph with a RADOS Gateway on loopback, stopped
 * by pid in `dispose()`). The CLI takes credentials from the AWS SDK's default chain, so the
 * target's are put in the environment for the test file's worker.
 */
export async function startS3(): Promise<S3Target> {
  const target = await startS3Target({
    env: process.env,
    containerEngine: containerEngineAvailable(),
  });
  process.env.AWS_ACCESS_KEY_ID = target.credentials.accessKeyId;
  process.env.AWS_SECRET_ACCESS_KEY = target.credentials.secretAccessKey;
  process.env.AWS_REGION = target.region;
  return target;
}

/** A prefix no other test uses (path segments: letters, digits, "-"). */
export function uniqueS3Prefix(label: string): string {
  return `cli-test/${label}-${randomBytes(4).toString('hex')}`;
}

export function s3StoreUrl(target: S3Target, prefix: string): string {
  const query = new URLSearchParams({ endpoint: target.endpoint, region: target.region });
  if (target.compatibility !== 'standard') query.set('compatibility', target.compatibility);
  return `s3://${target.bucket}/${prefix}?${query}`;
}

export function s3StoreAdapter(target: S3Target, prefix: string): StorageAdapter {
  return s3Adapter({
    bucket: target.bucket,
    prefix,
    endpoint: target.endpoint,
    region: target.region,
    credentials: { ...target.credentials },
    compatibility: target.compatibility,
  });
}
