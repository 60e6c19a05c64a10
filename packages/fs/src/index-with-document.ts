import type { Collection, DocumentWrite, PutResult, WriteOptions } from '@keepsake/core';
import type { DocumentStore } from './document-store.js';
import { toBackendError } from './errors.js';
import { assertIndexEntry, type IndexStore } from './index-store.js';
import { summaryOfStored } from './stored-summary.js';

/**
 * B7 with the `indexWithDocument` capability: a session's write carries its index entry, and
 * a listing never shows what was not stored.
 *
 * The entry is queued on the index's group-committed writer once the document's new bytes are
 * in place (the base renamed, or the delta written into its file), under the document's lock
 * (so two saves of one session queue their entries in the order their writes land), and
 * before the document's flush. The document's fdatasync and the index's batched fdatasync then
 * run concurrently, and the filesystem commits them together, instead of one after the other.
 *
 * A refused write (`ok: false`), and a write that fails before its bytes are in place (ENOSPC
 * while writing, a failed fsync of the temp file), never queue the entry. `putDocument`
 * resolves only once both are written (durably when asked) or have failed, and says what
 * happened:
 * - the document failed after its bytes were in place, and is still the new document (the
 *   fsync of its directory failed): it rejects with `WriteOutcomeUnknownError`; the entry
 *   describes what readers see;
 * - the document failed after its bytes were in place, and was taken back (a delta whose
 *   fdatasync failed is cut off again): the entry of the document as it is now is queued after
 *   the failed one, still under the document's lock, and it rejects with the document's error;
 * - the document landed and the entry failed: it resolves `{ ok: true, indexFailure }`. The
 *   write did land, so rejecting would be untrue (a retried create would meet its own
 *   document); core reports the failure and writes the entry again (B7).
 * An entry's outcome is caught the moment it is queued: it can fail while the document is
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
  // The write's entry (once its bytes are in place), then possibly the entry put back.
  const indexed: Promise<IndexOutcome>[] = [];
  let result: PutResult;
  try {
    result = await documents.put(collection, id, write, options, {
      onVisible: () => {
        indexed.push(outcomeOf(index.put(summary, options.durable)));
      },
      onTakenBack: async () => {
        const stored = await documents.get(collection, id).catch(() => null);
        const restored = stored === null ? null : summaryOfStored(id, stored);
        indexed.push(
          outcomeOf(
            restored === null
              ? index.delete(id, options.durable)
              : index.put(restored, options.durable),
          ),
        );
      },
    });
  } catch (error) {
    // The document's error is the one reported; the queued entries are let finish first, so
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
