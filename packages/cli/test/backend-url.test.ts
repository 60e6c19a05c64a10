import { describe, expect, it } from 'vitest';
import { parseBackendUrl } from '../src/backend-url.js';
import { BadBackendUrlError } from '../src/cli-errors.js';

describe('parseBackendUrl', () => {
  it('reads a plain path against the working directory, and fs:/// as an absolute path', () => {
    expect(parseBackendUrl('data/sessions', '/srv')).toEqual({
      scheme: 'fs',
      directory: '/srv/data/sessions',
      display: '/srv/data/sessions',
    });
    expect(parseBackendUrl('fs:///srv/my%20store', '/elsewhere')).toMatchObject({
      scheme: 'fs',
      directory: '/srv/my store',
    });
    expect(parseBackendUrl('fs://localhost/srv/x', '/')).toMatchObject({ directory: '/srv/x' });
  });

  it('reads redis:// options, leaves them out of the connection URL and masks the password', () => {
    const spec = parseBackendUrl(
      'redis://app:s3cret@cache.internal:6380/2?prefix=tenant-a&durability=replicas&replicas=2&connectTimeoutMs=900',
      '/',
    );
    expect(spec).toEqual({
      scheme: 'redis',
      connectionUrl: 'redis://app:s3cret@cache.internal:6380/2',
      keyPrefix: 'tenant-a',
      durability: 'replicas',
      replicas: 2,
      connectTimeoutMs: 900,
      display:
        'redis://app:***@cache.internal:6380/2?prefix=tenant-a&durability=replicas&replicas=2&connectTimeoutMs=900',
    });
    expect(parseBackendUrl('rediss://h:1', '/')).toMatchObject({
      keyPrefix: 'keepsake',
      durability: null,
      connectTimeoutMs: 5000,
    });
  });

  it('reads s3://bucket/prefix with its endpoint', () => {
    expect(
      parseBackendUrl(
        's3://my-bucket/keepsake/prod/?endpoint=http://127.0.0.1:9000&region=eu',
        '/',
      ),
    ).toMatchObject({
      scheme: 's3',
      bucket: 'my-bucket',
      prefix: 'keepsake/prod',
      endpoint: 'http://127.0.0.1:9000',
      region: 'eu',
      forcePathStyle: null,
      compatibility: 'standard',
    });
    expect(
      parseBackendUrl('s3://b12?compatibility=ceph-rgw&forcePathStyle=false', '/'),
    ).toMatchObject({
      prefix: '',
      forcePathStyle: false,
      compatibility: 'ceph-rgw',
    });
  });

  it.each([
    ['', 'it is empty'],
    ['mongodb://h/x', 'unknown scheme'],
    ['fs://relative/path', 'would be a host'],
    ['fs:///', 'absolute path below /'],
    ['fs:///x?sync=1', 'unknown option "sync"'],
    ['redis://h:1?prefix=a&prefix=b', 'given twice'],
    ['redis://h:1?prefix={tag}', 'without braces'],
    ['redis://h:1?durability=always', 'none, aof or replicas'],
    ['redis://h:1?replicas=2', 'goes with durability=replicas'],
    ['redis://h:1/db', 'not a database number'],
    ['redis://h:1?connectTimeoutMs=5s', 'integer from 100'],
    ['redis://h:1#x', 'fragment'],
    ['s3://Bad_Bucket', 'not a valid S3 bucket name'],
    ['s3://bucket?endpoint=ftp://x', 'http:// or https://'],
    ['s3://bucket?forcePathStyle=yes', 'true or false'],
    ['s3://bucket?compatibility=minio', 'standard or ceph-rgw'],
    ['s3://bucket/a//b', 'path segments'],
  ])('refuses %j (%s)', (url, reason) => {
    let thrown: unknown;
    try {
      parseBackendUrl(url, '/');
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(BadBackendUrlError);
    expect((thrown as Error).message).toContain(reason);
  });
});
