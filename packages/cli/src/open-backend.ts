import { readdir, readFile, stat } from 'node:fs/promises';
import type { StorageAdapter } from '@keepsake/core';
import type { BackendSpec, FsBackendSpec, RedisBackendSpec, S3BackendSpec } from './backend-url.js';
import {
  NothingThereError,
  PermissionDeniedError,
  SchemeNotAvailableError,
  TargetNotEmptyError,
} from './cli-errors.js';
import { checkRedisAnswers } from './redis-preflight.js';

/**
 * What the command does with the backend. `read`: the store must exist already (an `ls` of
 * a mistyped path must not create an empty store there), and the adapter is opened
 * read-only (`readOnly: true`): its open writes nothing (fs replays no group-commit log and
 * sweeps nothing, Redis and S3 start no index and probe nothing), and a write through it is a
 * `ReadOnlyError`. `write`: the store may be created, and Redis durable writes wait for the
 * AOF unless the URL says. `repair`: the store must exist, as to read, and is written, as to
 * write.
 */
export type BackendRole = 'read' | 'write' | 'repair';

/** The file `@keepsake/fs` writes at the root of every store (see its README, Layout). */
const FS_LAYOUT_MARKER = 'keepsake-fs.json';

/** Creates the adapter a URL names and opens it; the caller closes it. */
export async function openBackend(spec: BackendSpec, role: BackendRole): Promise<StorageAdapter> {
  const adapter = await createBackend(spec, role);
  try {
    await adapter.open();
  } catch (error) {
    await adapter.close().catch(() => undefined);
    throw error;
  }
  return adapter;
}

/**
 * Creates the adapter a URL names without opening it (a session store opens its adapter
 * itself). What can be checked before, is: the directory of an fs store, and that a Redis
 * server answers and accepts the credentials.
 */
export async function createBackend(spec: BackendSpec, role: BackendRole): Promise<StorageAdapter> {
  switch (spec.scheme) {
    case 'fs':
      await checkFsDirectory(spec, role);
      return (await import('@keepsake/fs')).fsAdapter({
        directory: spec.directory,
        readOnly: role === 'read',
      });
    case 'redis':
      return createRedisAdapter(spec, role);
    case 's3':
      return createS3Adapter(spec, role);
  }
}

/**
 * Credentials come from the AWS SDK's default chain (AWS_ACCESS_KEY_ID and
 * AWS_SECRET_ACCESS_KEY, AWS_PROFILE, instance metadata), never from the URL, so they stay out
 * of shell history and process listings.
 */
async function createS3Adapter(spec: S3BackendSpec, role: BackendRole): Promise<StorageAdapter> {
  let s3: typeof import('@keepsake/s3');
  try {
    s3 = await import('@keepsake/s3');
  } catch (error) {
    throw new SchemeNotAvailableError(
      's3',
      `@keepsake/s3 (and its peer @aws-sdk/client-s3) could not be loaded: ${(error as Error).message}`,
    );
  }
  return s3.s3Adapter({
    bucket: spec.bucket,
    ...(spec.prefix === '' ? {} : { prefix: spec.prefix }),
    ...(spec.endpoint === null ? {} : { endpoint: spec.endpoint }),
    ...(spec.region === null ? {} : { region: spec.region }),
    ...(spec.forcePathStyle === null ? {} : { forcePathStyle: spec.forcePathStyle }),
    compatibility: spec.compatibility,
    readOnly: role === 'read',
  });
}

async function createRedisAdapter(
  spec: RedisBackendSpec,
  role: BackendRole,
): Promise<StorageAdapter> {
  await checkRedisAnswers(spec);
  const { redisAdapter } = await import('@keepsake/redis');
  const durability = spec.durability ?? (role === 'read' ? 'none' : 'aof');
  return redisAdapter({
    url: spec.connectionUrl,
    // One command at a time: the several connections that let a server's concurrent
    // durable saves share fsyncs would only add connection set-ups here.
    connections: 1,
    keyPrefix: spec.keyPrefix,
    durability,
    ...(spec.replicas === null ? {} : { replicas: spec.replicas }),
    connectTimeoutMs: spec.connectTimeoutMs,
    socketTimeoutMs: Math.max(10_000, spec.connectTimeoutMs + 1),
    readOnly: role === 'read',
  });
}

async function checkFsDirectory(spec: FsBackendSpec, role: BackendRole): Promise<void> {
  const { directory } = spec;
  let entries: string[];
  try {
    const stats = await stat(directory);
    if (!stats.isDirectory()) {
      throw new NothingThereError(`${directory} is a file, not a Keepsake store directory`);
    }
    entries = await readdir(directory);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' && role === 'write') return;
    if (code === 'ENOENT' && role === 'repair') {
      throw new NothingThereError(
        `No Keepsake store to repair at ${directory}: the directory does not exist`,
      );
    }
    if (code === 'ENOENT') {
      throw new NothingThereError(
        `No Keepsake store at ${directory}: the directory does not exist`,
      );
    }
    if (code === 'EACCES' || code === 'EPERM') {
      throw new PermissionDeniedError(directory, `cannot read the directory (${code})`, {
        cause: error,
      });
    }
    throw error;
  }
  if (entries.includes(FS_LAYOUT_MARKER)) {
    await readFile(`${directory}/${FS_LAYOUT_MARKER}`).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'EACCES' || error.code === 'EPERM') {
        throw new PermissionDeniedError(directory, `cannot read ${FS_LAYOUT_MARKER}`, {
          cause: error,
        });
      }
    });
    return;
  }
  if (role !== 'write') {
    throw new NothingThereError(
      `${directory} is not a Keepsake store (it has no ${FS_LAYOUT_MARKER})`,
    );
  }
  if (entries.length > 0) {
    throw new TargetNotEmptyError(
      `${directory} holds files but is not a Keepsake store (no ${FS_LAYOUT_MARKER}); refusing to write a store into it. Name an empty or new directory.`,
    );
  }
}
