import type { Session, SessionStore } from '@keepsake/core';
import { expect } from 'vitest';
import type { TestEnvironment } from './environment.js';
import { storedTexts, textMessage } from './fixtures.js';

/**
 * Stored documents whose transcript cannot be read (A2), each made from the session id
 * and a sample of a healthy stored document (to cut it short).
 */
export const CORRUPT_VARIANTS: ReadonlyArray<
  readonly [string, (id: string, sample: string) => string]
> = [
  ['text that is not JSON', () => 'this is not json {'],
  ['a truncated document', (_id, sample) => sample.slice(0, Math.floor(sample.length / 2))],
  ['an empty file', () => ''],
  ['a JSON array', () => '[1, 2, 3]'],
  ['no transcript', (id) => JSON.stringify({ id, title: 'no messages' })],
  [
    'a message without role or content',
    (id) =>
      JSON.stringify({
        id,
        title: 'broken message',
        createdAt: 1,
        updatedAt: 1,
        messages: [{ id: 'm1' }],
        pending: null,
        toolCalls: [],
        parentId: null,
        rotatedTo: null,
        metadata: {},
      }),
  ],
];

/**
 * Writes `text` as the stored document of `id`, bypassing the store (a planted fault).
 * `expectedRevision` null: the document must not exist yet.
 */
export async function plantDocument(
  env: TestEnvironment,
  id: string,
  text: string,
  expectedRevision: number | null = null,
): Promise<void> {
  const raw = await env.rawAdapter();
  const result = await raw.putDocument(
    'sessions',
    id,
    { kind: 'full', revision: (expectedRevision ?? 0) + 1, text },
    { expectedRevision, durable: true },
  );
  expect(result.ok, 'planting a document through the adapter').toBe(true);
}

/**
 * A healthy session ('keep me'), saved with fsync, and its stored text: the sample the
 * CORRUPT_VARIANTS cut from, and what must still load after a neighbour is quarantined.
 */
export async function healthySessionWithSample(
  env: TestEnvironment,
  store: SessionStore,
): Promise<{ healthy: Session; sample: string }> {
  const healthy = await store.create(
    { id: env.id(), title: 'healthy', messages: [textMessage(env, 'user', 'keep me')] },
    { fsync: true },
  );
  const sample = (await storedTexts(store.adapter, healthy.id))!.texts[0]!;
  return { healthy, sample };
}
