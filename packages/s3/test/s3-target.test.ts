import { describe, expect, it } from 'vitest';
import { chooseS3Target, containerEngineAvailable, endpointTarget } from '../src/testing/index.js';

/** Which S3 a test run uses: the endpoint given, else testcontainers' MinIO, else local Ceph. */
describe('test S3 selection', () => {
  it('prefers KEEPSAKE_TEST_S3_ENDPOINT, then a container engine, then Ceph', () => {
    expect(
      chooseS3Target({
        env: { KEEPSAKE_TEST_S3_ENDPOINT: 'http://127.0.0.1:9000' },
        containerEngine: true,
      }),
    ).toBe('endpoint');
    expect(chooseS3Target({ env: { KEEPSAKE_TEST_S3_ENDPOINT: ' ' }, containerEngine: true })).toBe(
      'testcontainers',
    );
    expect(chooseS3Target({ env: {}, containerEngine: false })).toBe('ceph');
  });

  it('reads an endpoint and its credentials from the environment, naming what is missing', () => {
    const env = {
      KEEPSAKE_TEST_S3_ENDPOINT: 'http://127.0.0.1:9000',
      KEEPSAKE_TEST_S3_ACCESS_KEY_ID: 'key',
      KEEPSAKE_TEST_S3_SECRET_ACCESS_KEY: 'secret',
      KEEPSAKE_TEST_S3_BUCKET: 'tests',
    };
    expect(endpointTarget(env)).toMatchObject({
      kind: 'endpoint',
      endpoint: 'http://127.0.0.1:9000',
      region: 'us-east-1',
      bucket: 'tests',
      compatibility: 'standard',
      cluster: null,
    });
    expect(
      endpointTarget({ ...env, KEEPSAKE_TEST_S3_COMPATIBILITY: 'ceph-rgw' }).compatibility,
    ).toBe('ceph-rgw');
    expect(() => endpointTarget({ ...env, KEEPSAKE_TEST_S3_BUCKET: '' })).toThrow(
      /KEEPSAKE_TEST_S3_BUCKET/,
    );
    expect(() => endpointTarget({ ...env, KEEPSAKE_TEST_S3_COMPATIBILITY: 'x' })).toThrow(
      /KEEPSAKE_TEST_S3_COMPATIBILITY/,
    );
  });

  it('sees a container engine from DOCKER_HOST or a socket', () => {
    expect(containerEngineAvailable({ DOCKER_HOST: 'tcp://x:2375' }, () => false)).toBe(true);
    expect(containerEngineAvailable({}, (path) => path === '/var/run/docker.sock')).toBe(true);
    expect(containerEngineAvailable({}, () => false)).toBe(false);
  });
});
