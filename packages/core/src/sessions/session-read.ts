import type { StorageAdapter } from '../adapter/adapter.js';
import { adapterCall } from '../adapter/adapter-call.js';
import { CorruptDocumentError } from '../errors/storage-errors.js';
import type { StoreEvent } from '../store-types.js';
import type { Clock } from '../time/clock.js';
import { decodeSession, deepFreeze } from './documents/document-codec.js';
import { headText } from './documents/head-text.js';
import { removeEntryWithoutDocument } from './listing/index-entry-checks.js';
import type { CacheEntry } from './session-cache.js';

/** What a read needs of the persistence options: quarantines and warnings are reported. */
export interface SessionReadContext {
  adapter: StorageAdapter;
  clock: Clock;
  emit(event: StoreEvent): void;
}

/**
 * Reads a session from storage into a fresh cache entry, or null when none is stored:
 * decoded and validated (A5), its problems reported as warnings, and a document that does
 * not parse quarantined (A2) and taken out of the listing (B7). A read that finds no document
 * removes the session's index entry, if any was left (B7: a ghost is not kept).
 */
export async function readSessionEntry(
  context: SessionReadContext,
  id: string,
): Promise<CacheEntry | null> {
  const { adapter, clock } = context;
  const stored = await adapterCall(adapter.name, 'read a session', () =>
    adapter.getDocument('sessions', id),
  );
  if (stored === null) {
    await indexHousekeeping(context, id, 'no document was found', () =>
      removeEntryWithoutDocument(adapter, clock, id),
    );
    return null;
  }
  const decoded = decodeSession(id, stored, clock.now());
  if (!decoded.ok) {
    // A2: never replace it with an empty session; move it aside intact and say so.
    const location = await adapterCall(adapter.name, 'quarantine a document', () =>
      adapter.quarantineDocument('sessions', id, decoded.reason),
    );
    context.emit({ type: 'quarantine', sessionId: id, location });
    // B7: what is quarantined is not listed. Right after the move, so a listing in between
    // can only meet an entry without a document, which listings leave out (a ghost).
    await indexHousekeeping(context, id, 'the session was quarantined', () =>
      adapterCall(adapter.name, 'update the session index', () =>
        adapter.deleteIndexEntry(id, { durable: true }),
      ),
    );
    throw new CorruptDocumentError(id, adapter.name, location, {
      cause: new Error(decoded.reason),
    });
  }
  for (const problem of decoded.problems) {
    context.emit({
      type: 'warning',
      sessionId: id,
      field: problem.field,
      message: problem.message,
    });
  }
  const session = decoded.session;
  for (const message of session.messages) deepFreeze(message);
  return {
    session,
    storedRevision: stored.revision,
    storedMessages: [...session.messages],
    storedHeadText: headText(session),
    deltasSinceFull: stored.deltas.length,
    deltaBytesSinceFull: decoded.byteSize - stored.base.length,
    storedBytes: decoded.byteSize,
    durable: true,
    indexStale: false,
  };
}

/**
 * B7: an index update a read makes on the way. Its failure does not change what the read
 * reports (not found, or corrupt): it is a `warning` event, and a later listing leaves the
 * entry out and removes it all the same, since its document is gone.
 */
async function indexHousekeeping(
  context: SessionReadContext,
  id: string,
  why: string,
  update: () => Promise<void>,
): Promise<void> {
  try {
    await update();
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    context.emit({
      type: 'warning',
      sessionId: id,
      field: 'index',
      message: `${why}, but its index entry could not be removed (${reason}); listings leave it out`,
    });
  }
}
