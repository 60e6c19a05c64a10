import type { Collection, DocumentWrite, PutResult, WriteOptions } from '@keepsake/core';
import type { DocumentStore } from './document-store.js';
import { assertIndexEntry, type IndexStore } from './index-store.js';

/**
 * B7 with the `indexWithDocument` capability: a session's write carries its index entry.
 *
 * The entry is queued on the index's group-committed writer once the conditional write has
 * passed its revision check, under the document's lock (so two saves of one session queue
 * their entries in the order their writes land), and before the document's bytes and flush.
 * The document's fdatasync and the index's batched fdatasync then run concurrently, and the
 * filesystem commits them together, instead of one after the other.
 *
 * A refused write (`ok: false`) never queues the entry. `putDocument` resolves only once both
 * are written (durably when asked), and fails when either fails. If the document's write
 * fails after its entry was queued, the index may list that summary although the write did
 * not land: a stale listing entry, never data. The next successful save of the session
 * rewrites it, and `load()` reads the document itself, never the index.
 */
export async function putDocumentWithIndexEntry(
  documents: DocumentStore,
  index: IndexStore,
  collection: Collection,
  id: string,
  write: DocumentWrite,
  options: WriteOptions,
): Promise<PutResult> {
  const summary = options.indexEntry;
  // Only session documents are listed (the contract passes entries with those alone).
  if (summary === undefined || collection !== 'sessions') {
    return documents.put(collection, id, write, options);
  }
  // An entry the index cannot take is refused before the document is touched.
  assertIndexEntry(summary);
  const indexed: Promise<void>[] = [];
  let result: PutResult;
  try {
    result = await documents.put(collection, id, write, options, () => {
      indexed.push(index.put(summary, options.durable));
    });
  } catch (error) {
    // The document's error is the one reported; the queued entry is let finish first, so
    // nothing of this call is still running once it has failed.
    await Promise.allSettled(indexed);
    throw error;
  }
  await Promise.all(indexed);
  return result;
}
