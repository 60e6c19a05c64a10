import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type { StorageAdapter } from '@keepsake/core';
import { redisAdapter } from '@keepsake/redis';
import {
  type RedisTarget,
  containerEngineAvailable as redisContainerEngine,
  startRedisTarget,
} from '@keepsake/redis/testing';
import { s3Adapter } from '@keepsake/s3';
import {
  type S3Target,
  containerEngineAvailable as s3ContainerEngine,
  startS3Target,
} from '@keepsake/s3/testing';
import { Annotation, END, START, StateGraph } from '@langchain/langgraph';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  importSnippet,
  readmeBlocks,
  readmeBlockWith,
} from '../../../tooling/readme/run-snippet.mjs';
import { KeepsakeSaver } from '../src/index.js';

/**
 * The README's "On Redis" and "On S3" snippets run as written against a real redis-server
 * and a real Ceph RADOS Gateway (started here on loopback). Only where they connect is
 * replaced: the Redis URL and key prefix, and the S3 options object (an endpoint, keys and
 * the RGW quirk the README tells Ceph users to add). A graph then runs on the snippet's
 * `checkpointer`, and a second adapter of its own reads the checkpoint back from the server.
 */
const packageDirectory = fileURLToPath(new URL('../', import.meta.url));
const blocks = readmeBlocks({ packageDirectory, packageName: '@keepsake/langgraph' });

async function importCheckpointer(code: string): Promise<KeepsakeSaver> {
  return (await importSnippet(packageDirectory, code)).checkpointer as KeepsakeSaver;
}

const State = Annotation.Root({
  messages: Annotation<string[]>({
    reducer: (left, right) => [...left, ...right],
    default: () => [],
  }),
});

/** Runs one graph turn on the snippet's saver, then reads the thread back through `reader`. */
async function checkSnippet(checkpointer: KeepsakeSaver, reader: StorageAdapter): Promise<void> {
  const graph = new StateGraph(State)
    .addNode('reply', (state) => ({ messages: [`echo: ${state.messages.at(-1)}`] }))
    .addEdge(START, 'reply')
    .addEdge('reply', END)
    .compile({ checkpointer });
  const threadId = `readme-${randomUUID()}`;
  const config = { configurable: { thread_id: threadId }, durability: 'sync' as const };
  await graph.invoke({ messages: ['hello'] }, config);
  await checkpointer.close();

  const readBack = new KeepsakeSaver({ adapter: reader });
  try {
    const tuple = await readBack.getTuple({ configurable: { thread_id: threadId } });
    expect(tuple?.checkpoint.channel_values.messages).toEqual(['hello', 'echo: hello']);
  } finally {
    await readBack.close();
  }
}

describe('README "On Redis"', () => {
  let target: RedisTarget | undefined;
  beforeAll(async () => {
    target = await startRedisTarget({ env: process.env, containerEngine: redisContainerEngine() });
  }, 60_000);
  afterAll(() => target?.dispose());

  it('runs as written against a real redis-server (AOF always)', async () => {
    const keyPrefix = `readme-${randomUUID()}`;
    const code = readmeBlockWith(blocks, 'openRedisAdapter', 'KeepsakeSaver')
      .replace("url: 'redis://127.0.0.1:6379'", `url: ${JSON.stringify(target!.url)}`)
      .replace("keyPrefix: 'myapp'", `keyPrefix: ${JSON.stringify(keyPrefix)}`);
    expect(code).toContain(target!.url);
    expect(code).toContain(keyPrefix);
    await checkSnippet(
      await importCheckpointer(code),
      redisAdapter({ url: target!.url, keyPrefix }),
    );
  });
});

describe('README "On S3"', () => {
  let target: S3Target | undefined;
  beforeAll(async () => {
    target = await startS3Target({ env: process.env, containerEngine: s3ContainerEngine() });
  }, 180_000);
  afterAll(() => target?.dispose());

  it('runs as written against a real Ceph RADOS Gateway', async () => {
    const options = {
      bucket: target!.bucket,
      prefix: `readme/${randomUUID()}`,
      region: target!.region,
      endpoint: target!.endpoint,
      credentials: { ...target!.credentials },
      compatibility: target!.compatibility,
    };
    const snippet = readmeBlockWith(blocks, 'openS3Adapter', 'KeepsakeSaver');
    const code = snippet.replace(
      /openS3Adapter\(\{[\s\S]*?\n\}\)/,
      `openS3Adapter(${JSON.stringify(options)})`,
    );
    expect(code).not.toBe(snippet);
    await checkSnippet(await importCheckpointer(code), s3Adapter(options));
  });
});
