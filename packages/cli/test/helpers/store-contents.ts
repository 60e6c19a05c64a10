import type { Collection, StorageAdapter, StoredDocument } from '@keepsake/core';
import { expect } from 'vitest';
import { canonicalDocument } from '../../src/migration/canonical-document.js';
import { COLLECTIONS, listAll, readAllRecords } from '../../src/migration/list-all.js';

/** Everything a store holds that a migration carries, as the adapter returns it. */
export interface StoreContents {
  documents: Record<Collection, Map<string, StoredDocument>>;
  /** `<session>/<run>` → records (sequence and exact text). */
  journals: Map<string, Array<{ sequence: number; text: string }>>;
}

export async function readStoreContents(adapter: StorageAdapter): Promise<StoreContents> {
  const contents: StoreContents = {
    documents: Object.fromEntries(
      COLLECTIONS.map((collection) => [collection, new Map<string, StoredDocument>()]),
    ) as StoreContents['documents'],
    journals: new Map(),
  };
  for (const collection of COLLECTIONS) {
    for await (const id of listAll(adapter, collection)) {
      const stored = await adapter.getDocument(collection, id);
      if (stored !== null) contents.documents[collection].set(id, stored);
    }
  }
  for (const sessionId of contents.documents.sessions.keys()) {
    for (const runId of await adapter.listLogs(sessionId)) {
      const records = [];
      for await (const record of readAllRecords(adapter, sessionId, runId)) records.push(record);
      contents.journals.set(`${sessionId}/${runId}`, records);
    }
  }
  return contents;
}

/** Opens the adapter, reads everything, closes it. */
export async function contentsOf(adapter: StorageAdapter): Promise<StoreContents> {
  await adapter.open();
  try {
    return await readStoreContents(adapter);
  } finally {
    await adapter.close();
  }
}

/**
 * H3, byte for byte: every journal record is the original's exact text at the same
 * sequence, and every document is the original's exact bytes as a migration writes them (a
 * session's deltas folded into one full document, which is what a load of the original
 * reads); a document that was stored in full is the original's JSON.
 */
export function expectSameContents(copy: StoreContents, original: StoreContents): void {
  for (const collection of COLLECTIONS) {
    const ids = [...original.documents[collection].keys()].sort();
    expect([...copy.documents[collection].keys()].sort(), collection).toEqual(ids);
    for (const id of ids) {
      const before = original.documents[collection].get(id)!;
      const after = copy.documents[collection].get(id)!;
      const expected = canonicalDocument(collection, id, before);
      expect(expected.ok).toBe(true);
      expect(after.revision, `${collection}/${id}`).toBe(before.revision);
      expect(after.deltas, `${collection}/${id}`).toEqual([]);
      expect(after.base, `${collection}/${id}`).toBe(expected.ok ? expected.text : null);
      if (before.deltas.length === 0) {
        // Stored in full: the very bytes of the original (H3).
        expect(after.base, `${collection}/${id}`).toBe(before.base);
      }
    }
  }
  expect(copy.journals.size).toBe(original.journals.size);
  expect(copy.journals).toEqual(original.journals);
}
