import { runConformance } from '@keepsake/conformance';
import type { StorageAdapter } from '@keepsake/core';
import { type S3Adapter, s3Adapter } from '../src/index.js';
import { containerEngineAvailable, type S3Target, startS3Target } from '../src/testing/index.js';
import { conformancePrefix } from './conformance-child.js';

/**
 * E9's liveness test on a real RADOS Gateway, with adapters that make their own clients
 * (the owner lease needs one it can rebuild in its worker thread, so conformance.test.ts,
 * whose adapters share one client for fault injection, reports E9's liveness as not
 * verified). Only E9 runs here; every other clause runs in conformance.test.ts.
 */
let target: S3Target;
const adapters = new Set<S3Adapter>();

runConformance(
  {
    name: 's3 (own clients)',
    async setup() {
      target = await startS3Target({
        env: process.env,
        containerEngine: containerEngineAvailable(),
      });
    },
    async teardown() {
      for (const adapter of adapters) await adapter.close().catch(() => undefined);
      await target?.dispose();
    },
    async createAdapter(namespace) {
      const adapter = s3Adapter({
        endpoint: target.endpoint,
        region: target.region,
        credentials: target.credentials,
        bucket: target.bucket,
        prefix: conformancePrefix(namespace),
        compatibility: target.compatibility,
      });
      adapters.add(adapter);
      return adapter;
    },
    async destroyAdapter(adapter: StorageAdapter) {
      adapters.delete(adapter as S3Adapter);
      await adapter.close().catch(() => undefined);
    },
  },
  { testTimeoutMs: 60_000, clauses: ['E9'] },
);
