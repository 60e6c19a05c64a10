import { randomBytes } from 'node:crypto';
import { S3Client } from '@aws-sdk/client-s3';
import { createMessage, createSessionStore, type Message, type SessionStore } from '@keepsake/core';
import { type S3Adapter, type S3AdapterOptions, s3Adapter } from '../../src/index.js';
import { S3Requests } from '../../src/requests.js';
import {
  containerEngineAvailable,
  type S3Target,
  startS3Target,
  testClientConfig,
} from '../../src/testing/index.js';
import { FaultInjector } from './fault-middleware.js';

/** The S3 of one test file, a client with FAULT INJECTION middleware, and raw requests. */
export interface S3Fixture {
  readonly target: S3Target;
  readonly client: S3Client;
  readonly faults: FaultInjector;
  /** Requests outside any adapter (to damage or inspect objects out of band). */
  readonly raw: S3Requests;
  /** Adapter options on this target with a prefix no other test uses. */
  options(label: string, extra?: Partial<S3AdapterOptions>): S3AdapterOptions;
  dispose(): Promise<void>;
}

export async function startFixture(): Promise<S3Fixture> {
  const target = await startS3Target({
    env: process.env,
    containerEngine: containerEngineAvailable(),
  });
  const client = new S3Client(testClientConfig(target));
  const faults = new FaultInjector(client);
  const raw = new S3Requests(
    new S3Client(testClientConfig(target)),
    target.bucket,
    'standard',
    10_000,
    { attempts: 3, baseDelayMs: 20, maxDelayMs: 200 },
  );
  return {
    target,
    client,
    faults,
    raw,
    options: (label, extra = {}) => ({
      client,
      bucket: target.bucket,
      prefix: uniquePrefix(label),
      compatibility: target.compatibility,
      retry: { attempts: 4, baseDelayMs: 5, maxDelayMs: 50 },
      ...extra,
    }),
    async dispose() {
      client.destroy();
      raw.client.destroy();
      await target.dispose();
    },
  };
}

export function uniquePrefix(label: string): string {
  return `test/${label}-${randomBytes(4).toString('hex')}`;
}

/** A store over a new adapter; `close()` closes both, even when the server is gone. */
export function openStore(
  options: S3AdapterOptions,
  storeOptions: Omit<Parameters<typeof createSessionStore>[0], 'adapter'> = {},
): { store: SessionStore; adapter: S3Adapter; close(): Promise<void> } {
  const adapter = s3Adapter(options);
  const store = createSessionStore({ adapter, ...storeOptions });
  return {
    store,
    adapter,
    async close() {
      await store.close().catch(() => undefined);
      await adapter.close().catch(() => undefined);
    },
  };
}

export function userMessage(id: string, text = id): Message {
  return createMessage({ id, role: 'user', content: text });
}
