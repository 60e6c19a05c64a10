import type { StorageAdapter } from '@keepsake/core';
import { type S3AdapterOptions, s3Adapter } from '@keepsake/s3';
import type { BackendConfig } from '../config/config-schema.js';

type S3BackendConfig = Extract<BackendConfig, { kind: 's3' }>;

/**
 * The S3 adapter of one token namespace: its own prefix `<prefix>/<namespace>` and its own
 * client. The endpoint's conditional writes are probed when the adapter opens, so an
 * endpoint that would let two servers overwrite each other fails before the first request
 * is served (unless KEEPSAKE_S3_UNSAFE_SINGLE_WRITER says only one server writes).
 */
export function s3BackendAdapter(config: S3BackendConfig, namespace: string): StorageAdapter {
  const options: S3AdapterOptions = {
    bucket: config.bucket,
    prefix: `${config.prefix}/${namespace}`,
    region: config.region,
    compatibility: config.compatibility,
    unsafeSingleWriter: config.unsafeSingleWriter,
    createBucket: config.createBucket,
    journal: { batchWindowMs: config.journalBatchWindowMs },
    ...(config.endpoint === undefined ? {} : { endpoint: config.endpoint }),
    ...(config.forcePathStyle === undefined ? {} : { forcePathStyle: config.forcePathStyle }),
    ...(config.accessKeyId === undefined || config.secretAccessKey === undefined
      ? {}
      : {
          credentials: {
            accessKeyId: config.accessKeyId,
            secretAccessKey: config.secretAccessKey,
          },
        }),
  };
  return s3Adapter(options);
}

/** Where a namespace's objects go, for the startup banner (no secret). */
export function describeS3Backend(config: S3BackendConfig): string {
  const where = config.endpoint === undefined ? `region ${config.region}` : config.endpoint;
  return `s3 bucket ${config.bucket} at ${where}, keys under ${config.prefix}/<namespace>/${config.compatibility === 'standard' ? '' : `, compatibility ${config.compatibility}`}${config.unsafeSingleWriter ? ', UNSAFE single writer' : ''}`;
}
