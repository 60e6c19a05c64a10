import { S3CapabilityError } from '@keepsake/s3';
import { containerEngineAvailable, type S3Target, startS3Target } from '@keepsake/s3/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBackendAdapter, describeBackend } from '../src/backends/backend-factory.js';
import { configSchema } from '../src/config/config-schema.js';
import { loadConfig } from '../src/config/load-config.js';

/** KEEPSAKE_BACKEND=s3: configuration, one prefix per namespace, the endpoint probed at open. */
let target: S3Target;
beforeAll(async () => {
  target = await startS3Target({ env: process.env, containerEngine: containerEngineAvailable() });
});
afterAll(async () => {
  await target?.dispose();
});

function backendOn(extra: Record<string, unknown> = {}) {
  return configSchema.parse({
    backend: {
      kind: 's3',
      bucket: target.bucket,
      prefix: `factory-${process.pid}`,
      endpoint: target.endpoint,
      region: target.region,
      accessKeyId: target.credentials.accessKeyId,
      secretAccessKey: target.credentials.secretAccessKey,
      compatibility: target.compatibility,
      ...extra,
    },
  }).backend;
}

describe('the s3 backend', () => {
  it('reads its settings from the environment, naming a bad one', () => {
    const config = loadConfig({
      env: {
        KEEPSAKE_BACKEND: 's3',
        KEEPSAKE_S3_BUCKET: 'chats',
        KEEPSAKE_S3_ENDPOINT: 'http://127.0.0.1:7480',
        KEEPSAKE_S3_COMPATIBILITY: 'ceph-rgw',
        KEEPSAKE_S3_FORCE_PATH_STYLE: 'true',
        KEEPSAKE_S3_JOURNAL_WINDOW_MS: '100',
      },
    });
    expect(config.backend).toEqual({
      kind: 's3',
      bucket: 'chats',
      prefix: 'keepsake',
      region: 'us-east-1',
      endpoint: 'http://127.0.0.1:7480',
      forcePathStyle: true,
      compatibility: 'ceph-rgw',
      unsafeSingleWriter: false,
      createBucket: false,
      journalBatchWindowMs: 100,
    });
    expect(describeBackend(config.backend)).toContain('s3 bucket chats at http://127.0.0.1:7480');
    expect(() => loadConfig({ env: { KEEPSAKE_BACKEND: 's3' } })).toThrow(/KEEPSAKE_S3_BUCKET/);
    expect(() =>
      loadConfig({
        env: { KEEPSAKE_BACKEND: 's3', KEEPSAKE_S3_BUCKET: 'b1b', KEEPSAKE_S3_COMPATIBILITY: 'x' },
      }),
    ).toThrow(/KEEPSAKE_S3_COMPATIBILITY/);
    expect(() =>
      loadConfig({
        env: {
          KEEPSAKE_BACKEND: 's3',
          KEEPSAKE_S3_BUCKET: 'b1b',
          KEEPSAKE_S3_UNSAFE_SINGLE_WRITER: 'yes',
        },
      }),
    ).toThrow(/KEEPSAKE_S3_UNSAFE_SINGLE_WRITER/);
  });

  it('gives each namespace its own prefix in one bucket', async () => {
    const backend = backendOn();
    const alice = createBackendAdapter(backend, 'alice');
    const bob = createBackendAdapter(backend, 'bob');
    expect(alice.name).toBe('s3');
    await alice.open();
    await bob.open();
    const write = { kind: 'full' as const, revision: 1, text: '{"x":1}' };
    await alice.putDocument('sessions', 's1', write, { expectedRevision: null, durable: true });
    expect(await alice.hasDocument('sessions', 's1')).toBe(true);
    expect(await bob.hasDocument('sessions', 's1')).toBe(false);
    await alice.close();
    await bob.close();
  });

  it('an endpoint that needs a compatibility option fails when the adapter opens, naming it', async () => {
    if (target.compatibility !== 'ceph-rgw') return;
    const adapter = createBackendAdapter(backendOn({ compatibility: 'standard' }), 'alice');
    const error = await adapter.open().then(
      () => null,
      (caught: unknown) => caught,
    );
    expect(S3CapabilityError.is(error), String(error)).toBe(true);
    expect((error as Error).message).toContain("compatibility: 'ceph-rgw'");
    await adapter.close();
  });
});
