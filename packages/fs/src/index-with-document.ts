import type { Collection, DocumentWrite, PutResult, WriteOptions } from '@keepsake/core';
import type { DocumentStore } from './document-store.js';
import { toBackendError } from './errors.js';
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
 * are written (durably when asked) or have failed, and says what happened:
 * - the document failed: it rejects with the document's error, as without an entry. If the
 *   entry was written, the index may list a summary whose write did not land: a stale
 *   listing entry, never data; the next successful save rewrites it, and `load()` reads the
 *   document itself, never the index;
 * - the document landed and the entry failed: it resolves `{ ok: true, indexFailure }`. The
 *   write did land, so rejecting would be untrue (a retried create would meet its own
 *   document); core reports the failure and writes the entry again (B7).
 * The entry's outcome is caught the moment it is queued: it can fail while the document is
 * still being written, and a rejection with no handler yet would end the process.
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
  // Zero or one entry: queued only once the write passed its revision check.
  const indexed: Promise<IndexOutcome>[] = [];
  let result: PutResult;
  try {
    result = await documents.put(collection, id, write, options, () => {
      indexed.push(outcomeOf(index.put(summary, options.durable)));
    });
  } catch (error) {
    // The document's error is the one reported; the queued entry is let finish first, so
    // nothing of this call is still running once it has failed.
    await Promise.all(indexed);
    throw error;
  }
  const failure = (await Promise.all(indexed)).find((outcome) => outcome.failed);
  if (failure === undefined || !result.ok) return result;
  return { ok: true, indexFailure: toBackendError(failure.error, 'write the session index') };
}

type IndexOutcome = { readonly failed: false } | { readonly failed: true; readonly error: unknown };

/** The entry's outcome as a value: a promise that never rejects, handled from the start. */
function outcomeOf(update: Promise<void>): Promise<IndexOutcome> {
  return update.then(
    () => ({ failed: false }),
    (error: unknown) => ({ failed: true, error }),
  );
}
