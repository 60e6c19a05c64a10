import {
  decodeStoredSession,
  encodeSessionDocument,
  type Session,
  type StorageAdapter,
} from '@keepsake/core';
import { expect } from 'vitest';

/**
 * What a session document says on the backend, read straight from an adapter and decoded
 * with core's own codec (`decodeStoredSession`: base and deltas folded, then validated),
 * so the document format lives in one place. Tests use this to check what is *persisted*,
 * never what the store holds in memory.
 */
export interface PersistedSession {
  revision: number;
  session: Session;
}

/** A decoded session as loose JSON, for a test that plants invalid fields (A5). */
export type TamperableDocument = Record<string, unknown> & {
  messages: Array<Record<string, unknown>>;
};

/**
 * Reads and decodes the stored document of `id`, or null when there is none. A document
 * the store wrote must decode cleanly: a fold failure or a reset field fails the test.
 */
export async function readPersistedSession(
  adapter: StorageAdapter,
  id: string,
): Promise<PersistedSession | null> {
  const stored = await adapter.getDocument('sessions', id);
  if (stored === null) return null;
  // `now` only fills a missing message timestamp; a clean document never needs it.
  const decoded = decodeStoredSession(id, stored, 0);
  if (!decoded.ok) {
    return expect.fail(`the stored document of ${id} does not decode: ${decoded.reason}`);
  }
  expect(decoded.problems, `the stored document of ${id} decodes without problems`).toEqual([]);
  return { revision: stored.revision, session: decoded.session };
}

/**
 * Rewrites the stored document of a session in full after `edit` changed its decoded
 * JSON: how a test plants a document that parses but has a bad field (A5).
 */
export async function rewritePersistedSession(
  adapter: StorageAdapter,
  id: string,
  edit: (document: TamperableDocument) => void,
): Promise<void> {
  const persisted = await readPersistedSession(adapter, id);
  expect(persisted, `stored document of ${id}`).not.toBeNull();
  const { revision, session } = persisted!;
  const document = structuredClone(session) as unknown as TamperableDocument;
  edit(document);
  const result = await adapter.putDocument(
    'sessions',
    id,
    {
      kind: 'full',
      revision: revision + 1,
      // The edit may have made the session invalid on purpose; the encoder only serializes.
      text: encodeSessionDocument(document as unknown as Session),
    },
    { expectedRevision: revision, durable: true },
  );
  expect(result.ok, `rewriting the stored document of ${id} through the adapter`).toBe(true);
}
