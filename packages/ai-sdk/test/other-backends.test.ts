import { fileURLToPath } from 'node:url';
import { createSessionStore, type SessionStore, type StorageAdapter } from '@keepsake/core';
import { redisAdapter } from '@keepsake/redis';
import { RedisServerProcess } from '@keepsake/redis/testing';
import { s3Adapter } from '@keepsake/s3';
import { containerEngineAvailable, type S3Target, startS3Target } from '@keepsake/s3/testing';
import { validateUIMessages } from 'ai';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  importSnippet,
  readmeBlocks,
  readmeBlockWith,
} from '../../../tooling/readme/run-snippet.mjs';
import {
  createResumableStreamContext,
  loadChat,
  MARKER_PART_TYPE,
  saveChat,
} from '../src/index.js';
import { messageFromChunks } from '../src/message-from-chunks.js';
import {
  answerWords,
  chunkStream,
  dataSchemas,
  gatedStream,
  readAll,
  readUntil,
  scriptedAnswer,
  userMessage,
} from './helpers/chunk-streams.js';
import { uiMessages } from './helpers/ui-message-arbitraries.js';

/**
 * "Works on every backend": one smoke-level pass on Redis (a redis-server the harness
 * starts with AOF fsync always) and S3 (the s3 package's harness: a Ceph RADOS Gateway from
 * the local binaries, or an endpoint named by KEEPSAKE_TEST_S3_*). The full scenarios run
 * on memory and fs (resume.test.ts, crash.test.ts); this checks the same package code on
 * the other two adapters' journals and documents.
 */
interface BackendUnderTest {
  start(): Promise<void>;
  adapter(): StorageAdapter;
  /** The README's snippet for this backend, connected to the test's server instead. */
  readmeSnippet(): string;
  stop(): Promise<void>;
}

const packageDirectory = fileURLToPath(new URL('../', import.meta.url));
const blocks = readmeBlocks({ packageDirectory, packageName: '@keepsake/ai-sdk' });
const s3Options = () => ({
  bucket: s3.bucket,
  prefix,
  endpoint: s3.endpoint,
  region: s3.region,
  forcePathStyle: true,
  credentials: { ...s3.credentials },
  compatibility: s3.compatibility,
});

let redis: RedisServerProcess;
let s3: S3Target;
const prefix = `ai-sdk-${process.pid}`;
const backends: Record<'redis' | 's3', BackendUnderTest> = {
  redis: {
    start: async () => {
      redis = await RedisServerProcess.start({ persistence: 'aof-always' });
    },
    adapter: () => redisAdapter({ url: redis.url, keyPrefix: prefix }),
    readmeSnippet: () =>
      readmeBlockWith(blocks, 'openRedisAdapter', 'createResumableStreamContext')
        .replace("url: 'redis://127.0.0.1:6379'", `url: ${JSON.stringify(redis.url)}`)
        .replace("keyPrefix: 'chats'", `keyPrefix: ${JSON.stringify(prefix)}`),
    stop: async () => redis?.dispose(),
  },
  s3: {
    start: async () => {
      s3 = await startS3Target({ env: process.env, containerEngine: containerEngineAvailable() });
    },
    adapter: () => s3Adapter(s3Options()),
    readmeSnippet: () =>
      readmeBlockWith(blocks, 'openS3Adapter', 'createResumableStreamContext').replace(
        /openS3Adapter\(\{[\s\S]*?\n\}\)/,
        `openS3Adapter(${JSON.stringify(s3Options())})`,
      ),
    stop: async () => s3?.dispose(),
  },
};

describe.each(['redis', 's3'] as const)('on %s', (name) => {
  const backend = backends[name];
  const stores: SessionStore[] = [];
  const open = () => {
    const store = createSessionStore({ adapter: backend.adapter() });
    stores.push(store);
    return store;
  };
  beforeAll(() => backend.start(), 120_000);
  afterAll(async () => {
    await Promise.all(stores.map((store) => store.close()));
    await backend.stop();
  });

  it('a chat round-trips; an answer streamed by one instance is read and stopped from another, then regenerated there (B5, E5)', async () => {
    const [messages] = fc.sample(uiMessages, { seed: 42, numRuns: 1 });
    await saveChat(open(), 'saved-chat', messages!);
    expect(await loadChat(open(), 'saved-chat')).toStrictEqual(messages);

    const first = createResumableStreamContext({ store: open(), pollIntervalMs: 20 });
    const second = createResumableStreamContext({ store: open(), pollIntervalMs: 20 });
    const gate = gatedStream(scriptedAnswer(answerWords(30)));
    const live = await first.resumableStream('streamed-chat', () => gate.stream, {
      message: userMessage('q1', 'Hello'),
    });
    gate.release(20);
    const resumed = await second.resumeExistingStream('streamed-chat');
    const elsewhere = await readUntil(resumed!, (_, seen) => seen.length === 20);
    expect((await second.stopStream('streamed-chat')).cancelled).toBe(true);
    gate.release(1);
    const seen = await readAll(live);
    expect(seen.slice(0, 20)).toEqual(elsewhere);
    expect(seen.find((chunk) => chunk.type === MARKER_PART_TYPE)).toMatchObject({
      data: { type: 'cancelled' },
    });
    await first.settle();
    const chat = await loadChat(open(), 'streamed-chat');
    expect(chat[1]).toStrictEqual(await messageFromChunks(seen, 'unused'));
    await validateUIMessages({ messages: chat, dataSchemas });

    // B5: a regenerate from the other instance drops the old answer inside its own run, and
    // a saveChat meanwhile (the page's copy, the old answer gone) leaves the new one to it.
    const again = gatedStream(scriptedAnswer(['again']));
    const regenerated = await second.resumableStream('streamed-chat', () => again.stream, {
      message: userMessage('q1', 'Hello'),
      trigger: 'regenerate-message',
    });
    await saveChat(open(), 'streamed-chat', [
      userMessage('q1', 'Hello'),
      { id: 'partial-copy', role: 'assistant', parts: [{ type: 'text', text: 'ag' }] },
    ]);
    again.releaseAll();
    const replayed = await readAll(regenerated);
    await second.settle();
    const after = await loadChat(open(), 'streamed-chat');
    expect(after.map((message) => message.role)).toEqual(['user', 'assistant']);
    expect(after[1]).toStrictEqual(await messageFromChunks(replayed, 'unused'));
    expect(after[1]!.parts.at(-1)).toMatchObject({ type: 'text', text: 'again' });
    first.close();
    second.close();
  });

  it("the README's snippet for this backend runs as written, connected to the test's server", async () => {
    const code = backend.readmeSnippet();
    expect(code).toContain(prefix);
    const { store, streams } = (await importSnippet(packageDirectory, code)) as {
      store: SessionStore;
      streams: ReturnType<typeof createResumableStreamContext>;
    };
    const answer = await streams.resumableStream(
      'readme-chat',
      () => chunkStream(scriptedAnswer(['from', 'the', 'readme'])),
      { message: userMessage('readme-q', 'Hello') },
    );
    const chunks = await readAll(answer);
    await streams.settle();
    streams.close();
    await store.close();
    const chat = await loadChat(open(), 'readme-chat');
    expect(chat.map((message) => message.role)).toEqual(['user', 'assistant']);
    expect(chat[1]).toStrictEqual(await messageFromChunks(chunks, 'unused'));
  });
});
