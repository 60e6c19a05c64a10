import { fileURLToPath } from 'node:url';
import { S3Client } from '@aws-sdk/client-s3';
import { runConformance } from '@keepsake/conformance';
import type { StorageAdapter } from '@keepsake/core';
import { type S3Adapter, s3Adapter } from '../src/index.js';
import { S3Requests } from '../src/requests.js';
import { containerEngineAvailable, type S3Target, startS3Target } from '../src/testing/index.js';
import { testClientConfig } from '../src/testing/s3-target.js';
import { type ChildTarget, conformancePrefix, TARGET_ENV } from './conformance-child.js';
import { FaultInjector } from './helpers/fault-middleware.js';

/**
 * The whole suite on a real RADOS Gateway (Ceph 16.2 from Debian), started by this file
 * (or the endpoint KEEPSAKE_TEST_S3_ENDPOINT names). A namespace is a key prefix, so a second
 * adapter on the same namespace is a restart onto the same data. Every adapter shares one
 * client, on which FAULT INJECTION middleware can fail one request inside the backend.
 * `simulateCrash` SIGKILLs radosgw and starts it again: what it acknowledged must be there.
 */
let target: S3Target;
let client: S3Client;
let faults: FaultInjector;
const adapters = new Set<S3Adapter>();

const prefixOf = conformancePrefix;

runConformance(
  {
    name: 's3',
    // Real second processes (H1, E2's process kills) open the same S3 through this module.
    initializerModule: fileURLToPath(new URL('./conformance-child.ts', import.meta.url)),
    async setup() {
      target = await startS3Target({
        env: process.env,
        containerEngine: containerEngineAvailable(),
      });
      const child: ChildTarget = {
        endpoint: target.endpoint,
        region: target.region,
        credentials: target.credentials,
        bucket: target.bucket,
        compatibility: target.compatibility,
      };
      process.env[TARGET_ENV] = JSON.stringify(child);
      client = new S3Client(testClientConfig(target));
      faults = new FaultInjector(client);
    },
    async teardown() {
      delete process.env[TARGET_ENV];
      for (const adapter of adapters) await adapter.close().catch(() => undefined);
      client?.destroy();
      await target?.dispose();
    },
    async createAdapter(namespace) {
      const adapter = s3Adapter({
        client,
        bucket: target.bucket,
        prefix: prefixOf(namespace),
        compatibility: target.compatibility,
      });
      adapters.add(adapter);
      return adapter;
    },
    async destroyAdapter(adapter: StorageAdapter) {
      adapters.delete(adapter as S3Adapter);
      await adapter.close().catch(() => undefined);
    },
    async simulateCrash() {
      // Only a server this file started can be crashed; a shared one is left alone.
      await target.cluster?.crashAndRestartGateway();
    },
    async removeIndex(namespace) {
      const requests = new S3Requests(client, target.bucket, 'standard', 10_000, {
        attempts: 3,
        baseDelayMs: 50,
        maxDelayMs: 500,
      });
      const objects = await requests.listAll(`${prefixOf(namespace)}/index/`, 'remove the index');
      await requests.deleteMany(
        objects.map((object) => object.key),
        'remove the index',
      );
    },
    // A transient fault is a reset connection (the adapter may retry it away); a permanent
    // one the server's 403, which no retry gets past (B2).
    backendFaultKinds: ['transient', 'permanent'],
    injectBackendFault(namespace, targetKind, kind = 'transient') {
      const prefix = `${prefixOf(namespace)}/${targetKind === 'index' ? 'index/' : 'doc/sessions/'}`;
      const rule = faults.add({
        key: (key) => key.startsWith(prefix),
        effect: kind === 'transient' ? 'reset-before' : { status: 403, name: 'AccessDenied' },
      });
      return () => {
        rule.times = 0;
      };
    },
  },
  { testTimeoutMs: 60_000 },
);
