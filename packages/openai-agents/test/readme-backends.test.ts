import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { createSessionStore, type SessionStore, type StorageAdapter } from '@keepsake/core';
import { redisAdapter } from '@keepsake/redis';
import { RedisServerProcess } from '@keepsake/redis/testing';
import { s3Adapter } from '@keepsake/s3';
import { containerEngineAvailable, type S3Target, startS3Target } from '@keepsake/s3/testing';
import type { AgentInputItem } from '@openai/agents-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  importSnippet,
  readmeBlocks,
  readmeBlockWith,
} from '../../../tooling/readme/run-snippet.mjs';
import { KeepsakeSession } from '../src/index.js';

/**
 * The README's "On Redis or S3" snippets run as written against a real redis-server (AOF
 * always) and a real Ceph RADOS Gateway; only where they connect is replaced. Items added
 * through the snippet's session are read back by a store of the test's own (B3).
 */
const packageDirectory = fileURLToPath(new URL('../', import.meta.url));
const blocks = readmeBlocks({ packageDirectory, packageName: '@keepsake/openai-agents' });
const items: AgentInputItem[] = [
  { role: 'user', content: 'Book me a flight to Lisbon' },
  { role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Done ✓' }] },
];

async function checkSnippet(code: string, reader: StorageAdapter): Promise<void> {
  const { store, session } = (await importSnippet(packageDirectory, code)) as {
    store: SessionStore;
    session: KeepsakeSession;
  };
  await session.addItems(items);
  expect(await session.getItems()).toEqual(items);
  await store.close();
  const fresh = createSessionStore({ adapter: reader });
  try {
    const again = new KeepsakeSession({ store: fresh, sessionId: 'user-42' });
    expect(await again.getItems()).toEqual(items);
  } finally {
    await fresh.close();
  }
}

describe('README "On Redis or S3"', () => {
  let redis: RedisServerProcess | undefined;
  let s3: S3Target | undefined;
  beforeAll(async () => {
    [redis, s3] = await Promise.all([
      RedisServerProcess.start({ persistence: 'aof-always' }),
      startS3Target({ env: process.env, containerEngine: containerEngineAvailable() }),
    ]);
  }, 180_000);
  afterAll(async () => {
    await Promise.all([redis?.dispose(), s3?.dispose()]);
  });

  it('the Redis snippet runs as written against a real redis-server', async () => {
    const keyPrefix = `readme-${randomUUID()}`;
    const code = readmeBlockWith(blocks, 'openRedisAdapter', 'KeepsakeSession')
      .replace("url: 'redis://127.0.0.1:6379'", `url: ${JSON.stringify(redis!.url)}`)
      .replace("keyPrefix: 'agents'", `keyPrefix: ${JSON.stringify(keyPrefix)}`);
    expect(code).toContain(keyPrefix);
    await checkSnippet(code, redisAdapter({ url: redis!.url, keyPrefix }));
  });

  it('the S3 snippet runs as written against a real Ceph RADOS Gateway', async () => {
    const options = {
      bucket: s3!.bucket,
      prefix: `readme/${randomUUID()}`,
      region: s3!.region,
      endpoint: s3!.endpoint,
      credentials: { ...s3!.credentials },
      compatibility: s3!.compatibility,
    };
    const snippet = readmeBlockWith(blocks, 'openS3Adapter', 'KeepsakeSession');
    const code = snippet.replace(
      /openS3Adapter\(\{[\s\S]*?\n\}\)/,
      `openS3Adapter(${JSON.stringify(options)})`,
    );
    expect(code).not.toBe(snippet);
    await checkSnippet(code, s3Adapter(options));
  });
});
