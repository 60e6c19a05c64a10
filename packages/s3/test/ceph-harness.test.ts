import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CephCluster } from '../src/testing/index.js';
import { testClientConfig } from '../src/testing/s3-target.js';

/**
 * The harness itself: a Ceph cluster comes up on loopback, serves S3 with the user it
 * created, and keeps what radosgw acknowledged across a SIGKILL of radosgw.
 */
let cluster: CephCluster;
beforeAll(async () => {
  cluster = await CephCluster.start();
  console.info(`ceph test cluster up in ${cluster.startupMs} ms`);
});
afterAll(async () => {
  await cluster?.dispose();
});

describe('the Ceph test cluster', () => {
  it('serves S3 on loopback and keeps acknowledged objects across a radosgw crash', async () => {
    const client = new S3Client(
      testClientConfig({
        endpoint: cluster.endpoint,
        region: 'us-east-1',
        credentials: cluster.credentials,
      }),
    );
    const { CreateBucketCommand } = await import('@aws-sdk/client-s3');
    await client.send(new CreateBucketCommand({ Bucket: 'harness' }));
    await client.send(new PutObjectCommand({ Bucket: 'harness', Key: 'k', Body: 'kept' }));
    const before = cluster.pids.gateway;
    await cluster.crashAndRestartGateway();
    expect(cluster.pids.gateway).not.toBe(before);
    const read = await client.send(new GetObjectCommand({ Bucket: 'harness', Key: 'k' }));
    expect(await read.Body?.transformToString()).toBe('kept');
    client.destroy();
  });
});
