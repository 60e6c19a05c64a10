import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { S3Client } from '@aws-sdk/client-s3';
import {
  createSessionStore,
  dropMemoryNamespace,
  memoryAdapter,
  type SessionStore,
  type SessionStoreOptions,
  type StorageAdapter,
} from '@keepsake/core';
import { fsAdapter } from '@keepsake/fs';
import { redisAdapter } from '@keepsake/redis';
import {
  containerEngineAvailable,
  type RedisTarget,
  startRedisTarget,
} from '@keepsake/redis/testing';
import { s3Adapter } from '@keepsake/s3';
import { type S3Target, startS3Target, testClientConfig } from '@keepsake/s3/testing';

type StoreSettings = Omit<SessionStoreOptions, 'adapter'>;

export type BackendName = 'memory' | 'fs' | 'redis' | 's3';

/**
 * One backend that several stores open, as several server instances (or one after a restart)
 * would: the in-memory adapter by namespace, a temp directory, a redis-server the harness
 * starts (AOF, appendfsync always) or a Ceph RADOS Gateway (the s3 package's harness), each
 * under a fresh prefix.
 */
export interface Backend {
  readonly name: BackendName;
  /** A new store over the backend (a new server instance). */
  open(settings?: StoreSettings): SessionStore;
  /** The fs directory (fs only). */
  readonly directory: string | null;
  /** Closes every store it opened and removes what it can. */
  dispose(): Promise<void>;
}

let redis: RedisTarget | undefined;
let s3: S3Target | undefined;
let s3Client: S3Client | undefined;

/** Starts the servers `names` need (once per file); `stopServers` in afterAll. */
export async function startServers(names: readonly BackendName[]): Promise<void> {
  const engine = containerEngineAvailable();
  if (names.includes('redis') && redis === undefined) {
    redis = await startRedisTarget({ env: process.env, containerEngine: engine });
  }
  if (names.includes('s3') && s3 === undefined) {
    s3 = await startS3Target({ env: process.env, containerEngine: engine });
    s3Client = new S3Client(testClientConfig(s3));
  }
}

export async function stopServers(): Promise<void> {
  s3Client?.destroy();
  await s3?.dispose();
  await redis?.dispose();
  s3 = undefined;
  s3Client = undefined;
  redis = undefined;
}

export async function createBackend(
  name: BackendName,
  defaults: StoreSettings = {},
): Promise<Backend> {
  const stores: SessionStore[] = [];
  const namespace = `openai-agents-${process.pid}-${randomUUID().slice(0, 8)}`;
  const directory = name === 'fs' ? await mkdtemp(join(tmpdir(), 'keepsake-openai-agents-')) : null;
  const adapter = (): StorageAdapter => {
    switch (name) {
      case 'memory':
        return memoryAdapter({ namespace });
      case 'fs':
        return fsAdapter({ directory: directory! });
      case 'redis':
        return redisAdapter({ url: redis!.url, keyPrefix: namespace });
      case 's3':
        return s3Adapter({
          client: s3Client!,
          bucket: s3!.bucket,
          prefix: namespace,
          compatibility: s3!.compatibility,
        });
    }
  };
  return {
    name,
    directory,
    open(settings = {}) {
      const store = createSessionStore({ adapter: adapter(), ...defaults, ...settings });
      stores.push(store);
      return store;
    },
    async dispose() {
      await Promise.all(stores.map((store) => (store.closed ? undefined : store.close())));
      if (directory !== null) await rm(directory, { recursive: true, force: true });
      if (name === 'memory') dropMemoryNamespace(namespace);
    },
  };
}
