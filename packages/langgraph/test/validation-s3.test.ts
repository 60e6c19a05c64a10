import { randomUUID } from 'node:crypto';
import { S3Client } from '@aws-sdk/client-s3';
import { s3Adapter } from '@keepsake/s3';
import {
  containerEngineAvailable,
  type S3Target,
  startS3Target,
  testClientConfig,
} from '@keepsake/s3/testing';
import { validate } from '@langchain/langgraph-checkpoint-validation';
import { KeepsakeSaver } from '../src/index.js';

// LangGraph's own checkpointer validation suite, unmodified, on the S3 adapter: a Ceph
// RADOS Gateway this file starts on loopback (or the endpoint KEEPSAKE_TEST_S3_ENDPOINT
// names); a fresh key prefix per checkpointer, one client for all.
let target: S3Target | undefined;
let client: S3Client | undefined;

validate<KeepsakeSaver>({
  checkpointerName: '@keepsake/langgraph on s3',
  beforeAllTimeout: 120_000,
  async beforeAll() {
    target = await startS3Target({ env: process.env, containerEngine: containerEngineAvailable() });
    client = new S3Client(testClientConfig(target));
  },
  async afterAll() {
    client?.destroy();
    await target?.dispose();
  },
  createCheckpointer() {
    const adapter = s3Adapter({
      client: client!,
      bucket: target!.bucket,
      prefix: `langgraph/${randomUUID()}`,
      compatibility: target!.compatibility,
    });
    return new KeepsakeSaver({ adapter });
  },
  destroyCheckpointer: (saver) => saver.close(),
});
