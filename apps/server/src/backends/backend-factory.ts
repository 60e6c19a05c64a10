import { join, resolve } from 'node:path';
import { memoryAdapter, type StorageAdapter } from '@keepsake/core';
import { fsAdapter } from '@keepsake/fs';
import type { BackendConfig } from '../config/config-schema.js';
import { describeRedisBackend, redisBackendAdapter } from './redis-backend.js';
import { describeS3Backend, s3BackendAdapter } from './s3-backend.js';

/**
 * Creates the storage adapter of one token namespace. Each namespace gets its own storage
 * root (a directory, a key prefix, an object prefix), so isolation between tokens holds by
 * construction: a route only ever receives its own namespace's store.
 *
 * Adding a backend means adding an entry here and a variant to `backendSchema`; the routes
 * never see which backend is in use.
 */
export type BackendFactory<Kind extends BackendConfig['kind']> = (
  config: Extract<BackendConfig, { kind: Kind }>,
  namespace: string,
) => StorageAdapter;

const factories: { [Kind in BackendConfig['kind']]: BackendFactory<Kind> } = {
  fs: (config, namespace) => fsAdapter({ directory: join(resolve(config.directory), namespace) }),
  memory: () => memoryAdapter(),
  redis: (config, namespace) => redisBackendAdapter(config, namespace),
  s3: (config, namespace) => s3BackendAdapter(config, namespace),
};

export function createBackendAdapter(config: BackendConfig, namespace: string): StorageAdapter {
  const factory = factories[config.kind] as BackendFactory<typeof config.kind>;
  return factory(config, namespace);
}

/** Human-readable location of a namespace's data, for the startup banner and logs. */
export function describeBackend(config: BackendConfig): string {
  switch (config.kind) {
    case 'fs':
      return `fs at ${resolve(config.directory)}`;
    case 'memory':
      return 'memory (nothing survives a restart)';
    case 'redis':
      return describeRedisBackend(config);
    case 's3':
      return describeS3Backend(config);
  }
}
