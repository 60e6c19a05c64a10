import type { StorageAdapter } from './adapter.js';
import { adapterCall } from './adapter-call.js';
import type { Clock } from './clock.js';
import { decodeSession, deepFreeze, headOf } from './document-codec.js';
import type { CacheEntry } from './session-cache.js';
import { CorruptDocumentError } from './storage-errors.js';
import type { StoreEvent } from './store-types.js';

/** What a read needs of the persistence options: quarantines and warnings are reported. */
export interface SessionReadContext {
  adapter: StorageAdapter;
  clock: Clock;
  emit(event: StoreEvent): void;
}

/**
 * Reads a session from storage into a fresh cache entry, or null when none is stored:
 * decoded and validated (A5), its problems reported as warnings, and a document that does
 * not parse quarantined (A2).
 */
export async function readSessionEntry(
  context: SessionReadContext,
  id: string,
): Promise<CacheEntry | null> {
  const { adapter, clock } = context;
  const stored = await adapterCall(adapter.name, 'read a session', () =>
    adapter.getDocument('sessions', id),
  );
  if (stored === null) return null;
  const decoded = decodeSession(id, stored, clock.now());
  if (!decoded.ok) {
    // A2: never replace it with an empty session; move it aside intact and say so.
    const location = await adapterCall(adapter.name, 'quarantine a document', () =>
      adapter.quarantineDocument('sessions', id, decoded.reason),
    );
    context.emit({ type: 'quarantine', sessionId: id, location });
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
    storedHeadText: JSON.stringify(headOf(session)),
    deltasSinceFull: stored.deltas.length,
    deltaBytesSinceFull: decoded.byteSize - stored.base.length,
    storedBytes: decoded.byteSize,
    durable: true,
    indexStale: false,
  };
}
