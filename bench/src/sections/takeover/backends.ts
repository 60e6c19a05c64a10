import { spawnSync } from 'node:child_process';
import type { StorageAdapter } from '@keepsake/core';
import { fsAdapter } from '@keepsake/fs';
import { redisAdapter } from '@keepsake/redis';
import { RedisClusterProcesses, RedisServerProcess } from '@keepsake/redis/testing';
import { s3Adapter } from '@keepsake/s3';
import { containerEngineAvailable, startS3Target } from '@keepsake/s3/testing';
import type { Workspace } from '../../harness/workspace.js';
import { runs } from '../redis/redis-benchmark.js';

/**
 * Where a store of the takeover section keeps its sessions, as plain data: the owner
 * process gets it as its argument and opens the same adapter the follower does.
 */
export type BackendSettings =
  | { readonly kind: 'fs'; readonly directory: string }
  | { readonly kind: 'redis'; readonly url: string; readonly keyPrefix: string }
  | {
      readonly kind: 'redis-cluster';
      readonly nodes: ReadonlyArray<{ host: string; port: number }>;
      readonly keyPrefix: string;
    }
  | {
      readonly kind: 's3';
      readonly endpoint: string;
      readonly region: string;
      readonly credentials: { accessKeyId: string; secretAccessKey: string };
      readonly bucket: string;
      readonly prefix: string;
      readonly compatibility: 'standard' | 'ceph-rgw';
    };

export type BackendKind = BackendSettings['kind'];

/** Each backend's adapter with its default settings: the takeover is measured as shipped. */
export function backendAdapter(settings: BackendSettings): StorageAdapter {
  switch (settings.kind) {
    case 'fs':
      return fsAdapter({ directory: settings.directory });
    case 'redis':
      return redisAdapter({ url: settings.url, keyPrefix: settings.keyPrefix });
    case 'redis-cluster':
      return redisAdapter({ clusterNodes: [...settings.nodes], keyPrefix: settings.keyPrefix });
    case 's3':
      return s3Adapter({
        endpoint: settings.endpoint,
        region: settings.region,
        credentials: { ...settings.credentials },
        forcePathStyle: true,
        bucket: settings.bucket,
        prefix: settings.prefix,
        compatibility: settings.compatibility,
      });
  }
}

/** A backend started for the section, stopped by `dispose` (only what it started). */
export interface StartedBackend {
  readonly settings: BackendSettings;
  dispose(): Promise<void>;
}

/** Why a backend cannot run here, or null. Decided once, when the section is loaded. */
export const unavailableBackends: ReadonlyMap<BackendKind, string> = (() => {
  const reasons = new Map<BackendKind, string>();
  if (!runs(process.env.KEEPSAKE_TEST_REDIS_SERVER ?? 'redis-server')) {
    const why = 'redis-server is not installed (apt-get install redis-server)';
    reasons.set('redis', why);
    reasons.set('redis-cluster', why);
  } else if (!runs(process.env.KEEPSAKE_TEST_REDIS_CLI ?? 'redis-cli')) {
    reasons.set('redis-cluster', 'redis-cli is not installed (it joins the cluster)');
  }
  const cephInstalled = ['ceph-mon', 'ceph-osd', 'radosgw', 'ceph'].every(
    (binary) => spawnSync(binary, ['--version'], { stdio: 'ignore' }).status === 0,
  );
  if ((process.env.KEEPSAKE_TEST_S3_ENDPOINT ?? '').trim() === '' && !cephInstalled) {
    reasons.set(
      's3',
      'no S3 endpoint: set KEEPSAKE_TEST_S3_ENDPOINT (and its credentials), or install Ceph',
    );
  }
  return reasons;
})();

/** Starts `kind` on loopback (or in the workspace, for fs). */
export async function startBackend(
  kind: BackendKind,
  workspace: Workspace,
): Promise<StartedBackend> {
  const keyPrefix = `takeover-${process.pid}`;
  switch (kind) {
    case 'fs': {
      const directory = await workspace.directory('takeover-fs');
      return { settings: { kind, directory }, dispose: () => workspace.remove(directory) };
    }
    case 'redis': {
      // appendfsync always: the adapter's default durability ('aof') needs it.
      const server = await RedisServerProcess.start({ persistence: 'aof-always' });
      return {
        settings: { kind, url: `redis://${server.host}:${server.port}`, keyPrefix },
        dispose: () => server.dispose(),
      };
    }
    case 'redis-cluster': {
      const cluster = await RedisClusterProcesses.start({ masters: 3, persistence: 'aof-always' });
      return {
        settings: { kind, nodes: cluster.seeds, keyPrefix },
        dispose: () => cluster.dispose(),
      };
    }
    case 's3': {
      const target = await startS3Target({
        env: process.env,
        containerEngine: containerEngineAvailable(),
      });
      return {
        settings: {
          kind,
          endpoint: target.endpoint,
          region: target.region,
          credentials: {
            accessKeyId: target.credentials.accessKeyId,
            secretAccessKey: target.credentials.secretAccessKey,
          },
          bucket: target.bucket,
          prefix: keyPrefix,
          compatibility: target.compatibility,
        },
        dispose: () => target.dispose(),
      };
    }
  }
}
