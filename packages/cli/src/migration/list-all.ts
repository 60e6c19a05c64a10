import {
  COLLECTIONS as CORE_COLLECTIONS,
  type Collection,
  type StorageAdapter,
} from '@keepsake/core';
import { type CollectionCounts, emptyCounts } from './collection-counts.js';

/** Every collection core knows, so a migration or a listing never leaves one behind (H3). */
export const COLLECTIONS: readonly Collection[] = CORE_COLLECTIONS;

/** Every id of a collection, page by page, in the adapter's order. */
export async function* listAll(
  adapter: StorageAdapter,
  collection: Collection,
): AsyncGenerator<string> {
  let cursor: string | null = null;
  do {
    const page = await adapter.listDocuments(collection, { cursor, limit: 500 });
    yield* page.ids;
    cursor = page.nextCursor;
  } while (cursor !== null);
}

/** How many documents each collection holds. */
export async function countDocuments(adapter: StorageAdapter): Promise<CollectionCounts> {
  const counts = emptyCounts();
  for (const collection of COLLECTIONS) {
    for await (const _id of listAll(adapter, collection)) counts[collection]++;
  }
  return counts;
}

/** Whether the adapter holds any document at all. */
export async function holdsDocuments(adapter: StorageAdapter): Promise<boolean> {
  for (const collection of COLLECTIONS) {
    const page = await adapter.listDocuments(collection, { cursor: null, limit: 1 });
    if (page.ids.length > 0) return true;
  }
  return false;
}

/** Every record of a journal, page by page. */
export async function* readAllRecords(
  adapter: StorageAdapter,
  sessionId: string,
  runId: string,
): AsyncGenerator<{ sequence: number; text: string }> {
  const page = 10_000;
  let after = 0;
  for (;;) {
    const read = await adapter.readLog(sessionId, runId, { afterSequence: after, limit: page });
    yield* read.records;
    const last = read.records.at(-1);
    if (last === undefined || read.records.length < page) return;
    after = last.sequence;
  }
}
