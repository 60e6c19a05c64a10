import { S3Client } from '@aws-sdk/client-s3';
import { InvalidConfigError } from '@keepsake/core';
import { describe, expect, it } from 'vitest';
import { s3Adapter, s3Capabilities } from '../src/index.js';

/** Options are validated when the adapter is made; each mistake names its option. */
function invalid(options: unknown): string {
  try {
    s3Adapter(options as never);
  } catch (error) {
    expect(InvalidConfigError.isInstance(error), String(error)).toBe(true);
    return (error as Error).message;
  }
  throw new Error('the options were accepted');
}

const local = {
  endpoint: 'http://127.0.0.1:1',
  region: 'us-east-1',
  credentials: { accessKeyId: 'a', secretAccessKey: 'b' },
};

describe('s3Adapter options', () => {
  it('needs a valid bucket name and a prefix without leading or trailing slashes', () => {
    expect(invalid({ ...local })).toContain('option `bucket`');
    expect(invalid({ ...local, bucket: 'Upper_Case' })).toContain('option `bucket`');
    expect(invalid({ ...local, bucket: 'ok-bucket', prefix: '/lead' })).toContain(
      'option `prefix`',
    );
    expect(invalid({ ...local, bucket: 'ok-bucket', prefix: 'trail/' })).toContain(
      'option `prefix`',
    );
    expect(invalid({ ...local, bucket: 'ok-bucket', prefix: 'a b' })).toContain('option `prefix`');
  });

  it('refuses unknown options and values of the wrong type, naming them', () => {
    expect(invalid({ ...local, bucket: 'ok-bucket', unknown: 1 })).toContain('unknown');
    expect(invalid({ ...local, bucket: 'ok-bucket', unsafeSingleWriter: 'yes' })).toContain(
      'option `unsafeSingleWriter`',
    );
    expect(invalid({ ...local, bucket: 'ok-bucket', compatibility: 'minio' })).toContain(
      'option `compatibility`',
    );
    expect(invalid({ ...local, bucket: 'ok-bucket', retry: { attempts: 0 } })).toContain(
      'option `retry.attempts`',
    );
    expect(invalid({ ...local, bucket: 'ok-bucket', journal: { batchWindowMs: -1 } })).toContain(
      'option `journal.batchWindowMs`',
    );
    expect(invalid({ ...local, bucket: 'ok-bucket', endpoint: 'not a url' })).toContain(
      'option `endpoint`',
    );
    expect(
      invalid({
        ...local,
        bucket: 'ok-bucket',
        ownerLease: { renewIntervalMs: 2_000, expireAfterMs: 3_000 },
      }),
    ).toContain('option `ownerLease.expireAfterMs`');
    expect(invalid({ ...local, bucket: 'ok-bucket', ownerLease: true })).toContain(
      'option `ownerLease`',
    );
  });

  it('F1: liveness only with a client the adapter makes, not read-only, and ownerLease not false', () => {
    const client = new S3Client({ region: 'us-east-1', credentials: local.credentials });
    expect(s3Adapter({ ...local, bucket: 'ok-bucket' }).liveness).toBeDefined();
    expect(
      s3Adapter({ ...local, bucket: 'ok-bucket', ownerLease: false }).liveness,
    ).toBeUndefined();
    expect(s3Adapter({ ...local, bucket: 'ok-bucket', readOnly: true }).liveness).toBeUndefined();
    expect(s3Adapter({ client, bucket: 'ok-bucket' }).liveness).toBeUndefined();
    client.destroy();
  });

  it('takes a client or the settings of one, not both', () => {
    const client = new S3Client({ region: 'us-east-1', credentials: local.credentials });
    expect(invalid({ client, bucket: 'ok-bucket', endpoint: local.endpoint })).toContain(
      'option `endpoint`',
    );
    expect(invalid({ client: { send: 1 }, bucket: 'ok-bucket' })).toContain('option `client`');
    const adapter = s3Adapter({ client, bucket: 'ok-bucket' });
    expect(adapter.client).toBe(client);
    expect(adapter.keys.root).toBe('keepsake/');
    client.destroy();
  });

  it('declares B4 as a gap only in the unsafe single-writer mode (H1)', () => {
    expect(s3Capabilities(false)).toMatchObject({
      durability: 'acknowledged',
      conditionalWrites: true,
      sharedAcrossProcesses: true,
      appendDeltas: false,
      gaps: [],
    });
    const unsafe = s3Capabilities(true);
    expect(unsafe.conditionalWrites).toBe(false);
    expect(unsafe.gaps.map((gap) => gap.clause)).toEqual(['B4']);
  });
});
