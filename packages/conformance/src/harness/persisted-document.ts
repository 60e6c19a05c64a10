import type { StorageAdapter } from '@keepsake/core';
import { expect } from 'vitest';

/**
 * What a session document says on the backend, read straight from an adapter: the base
 * written in full, with the deltas appended since folded in. The document format is the
 * one docs/architecture.md describes (a full document, or a delta
 * `{ head, appended, baseCount }`); tests use this to check what is *persisted*, never
 * what the store holds in memory.
 */
export interface PersistedSession {
  revision: number;
  document: Record<string, unknown> & { messages: Array<Record<string, unknown>> };
}

export async function readPersistedSession(
  adapter: StorageAdapter,
  id: string,
): Promise<PersistedSession | null> {
  const stored = await adapter.getDocument('sessions', id);
  if (stored === null) return null;
  let document = JSON.parse(stored.base) as PersistedSession['document'];
  for (const deltaText of stored.deltas) {
    const delta = JSON.parse(deltaText) as {
      head: Record<string, unknown>;
      appended: Array<Record<string, unknown>>;
      baseCount: number;
    };
    expect(delta.baseCount, `delta of ${id} fits its base`).toBe(document.messages.length);
    const format = Object.fromEntries(
      Object.entries(document).filter(([key]) => key.startsWith('_keepsake')),
    );
    document = { ...format, ...delta.head, messages: [...document.messages, ...delta.appended] };
  }
  return { revision: stored.revision, document };
}

/**
 * Rewrites the stored document of a session in full after `edit` changed its folded
 * JSON: how a test plants a document that parses but has a bad field (A5).
 */
export async function rewritePersistedSession(
  adapter: StorageAdapter,
  id: string,
  edit: (document: PersistedSession['document']) => void,
): Promise<void> {
  const persisted = await readPersistedSession(adapter, id);
  expect(persisted, `stored document of ${id}`).not.toBeNull();
  const { revision, document } = persisted!;
  edit(document);
  const result = await adapter.putDocument(
    'sessions',
    id,
    { kind: 'full', revision: revision + 1, text: JSON.stringify(document) },
    { expectedRevision: revision, durable: true },
  );
  expect(result.ok, `rewriting the stored document of ${id} through the adapter`).toBe(true);
}
