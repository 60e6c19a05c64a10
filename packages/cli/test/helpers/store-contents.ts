import type { Collection, StorageAdapter, StoredDocument } from '@keepsake/core';
import { COLLECTIONS, listAll, readAllRecords } from '../../src/migration/list-all.js';

/** Everything a store holds that a migration carries, as the adapter returns it. */
export interface StoreContents {
  documents: Record<Collection, Map<string, StoredDocument>>;
  /** `<session>/<run>` → records (sequence and exact text). */
  journals: Map<string, Array<{ sequence: number; text: string }>>;
}

export async function readStoreContents(adapter: StorageAdapter): Promise<StoreContents> {
  const contents: StoreContents = {
    documents: { sessions: new Map(), revisions: new Map(), lifecycle: new Map() },
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
