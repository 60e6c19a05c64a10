import { BackendUnavailableError, KeepsakeError } from '@keepsake/core';
import type { BackendConfig } from '../config/config-schema.js';
import { maskKeyId, maskUrl, StartupError } from './startup-error.js';

/** The adapters' option names in their hints, as the server's variables. */
const S3_OPTION_VARIABLES: ReadonlyArray<readonly [RegExp, string]> = [
  [/the option `createBucket: true`/g, 'KEEPSAKE_S3_CREATE_BUCKET=true'],
  [/the option `compatibility: 'ceph-rgw'`/g, 'KEEPSAKE_S3_COMPATIBILITY=ceph-rgw'],
  [/the option `unsafeSingleWriter: true`/g, 'KEEPSAKE_S3_UNSAFE_SINGLE_WRITER=true'],
];

/** The HTTP status an AWS SDK error carries, if any. */
function httpStatusOf(error: unknown): number | undefined {
  for (let current = error; current instanceof Error; current = current.cause) {
    const status = (current as { $metadata?: { httpStatusCode?: unknown } }).$metadata
      ?.httpStatusCode;
    if (typeof status === 'number') return status;
  }
  return undefined;
}

function s3Where(config: Extract<BackendConfig, { kind: 's3' }>): string {
  return config.endpoint === undefined
    ? `AWS S3 (region ${config.region})`
    : `KEEPSAKE_S3_ENDPOINT=${maskUrl(config.endpoint)}`;
}

/**
 * A store that failed to open, said in the server's terms: which variable to change, to
 * what. Null when the failure is not about configuration (then it is reported as it is).
 */
export function explainOpenFailure(error: unknown, config: BackendConfig): StartupError | null {
  if (!KeepsakeError.isInstance(error)) return null;
  if (config.kind === 'redis' && error.name === 'RedisDurabilityError') {
    return new StartupError(
      `KEEPSAKE_REDIS_DURABILITY (backend.durability) is '${config.durability}', and KEEPSAKE_REDIS_URL=${maskUrl(config.url)} cannot confirm it: ${error.message}. Configure the server so, or set KEEPSAKE_REDIS_DURABILITY=none to accept losing the last writes of a Redis crash.`,
      { cause: error },
    );
  }
  if (config.kind !== 's3') return null;
  const where = s3Where(config);
  if (httpStatusOf(error) === 403) {
    const keys =
      config.accessKeyId === undefined
        ? "the AWS SDK's credential chain (KEEPSAKE_S3_ACCESS_KEY_ID and KEEPSAKE_S3_SECRET_ACCESS_KEY are not set)"
        : `KEEPSAKE_S3_ACCESS_KEY_ID=${maskKeyId(config.accessKeyId)} and KEEPSAKE_S3_SECRET_ACCESS_KEY=****`;
    return new StartupError(
      `${where} refused the credentials from ${keys} for KEEPSAKE_S3_BUCKET=${config.bucket} (403 Forbidden). Check the key id and the secret, and that the key may read and write the bucket.`,
      { cause: error },
    );
  }
  if (error.name === 'S3CapabilityError') {
    let message = error.message;
    for (const [option, variable] of S3_OPTION_VARIABLES)
      message = message.replace(option, variable);
    return new StartupError(`KEEPSAKE_S3_BUCKET=${config.bucket} at ${where}: ${message}`, {
      cause: error,
    });
  }
  if (BackendUnavailableError.isInstance(error)) {
    return new StartupError(
      `${where}: nothing usable answers (${error.message}). Check KEEPSAKE_S3_ENDPOINT (scheme, host and port) or KEEPSAKE_S3_REGION.`,
      { cause: error },
    );
  }
  return null;
}
