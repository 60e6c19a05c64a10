import type { StorageAdapter } from '../adapter/adapter.js';
import { adapterCall } from '../adapter/adapter-call.js';
import { CorruptDocumentError, NotFoundError } from '../errors/storage-errors.js';
import type { Clock } from '../time/clock.js';
import { decodeSession, encodeFull } from './documents/document-codec.js';
import type { CacheEntry } from './session-cache.js';

/** B5: the id a retained revision is stored under: `<sessionId>.<revision>`. */
export function retainedRevisionId(sessionId: string, revision: number): string {
  return `${sessionId}.${revision}`;
}

/** B5: keeps the stored revision before a deliberate shrink, readable only on request. */
export async function retainStoredRevision(
  adapter: StorageAdapter,
  clock: Clock,
  id: string,
): Promise<void> {
  const stored = await adapterCall(adapter.name, 'read a session', () =>
    adapter.getDocument('sessions', id),
  );
  if (stored === null) return;
  const decoded = decodeSession(id, stored, clock.now());
  const text = decoded.ok ? encodeFull(decoded.session) : stored.base;
  const retainedId = retainedRevisionId(id, stored.revision);
  await adapterCall(adapter.name, 'retain a revision', () =>
    adapter.putDocument(
      'revisions',
      retainedId,
      { kind: 'full', revision: 1, text },
      {
        expectedRevision: null,
        durable: true,
      },
    ),
  );
}

/** B5: reads a retained revision as a detached entry (never cached, never saved). */
export async function readRetainedRevision(
  adapter: StorageAdapter,
  clock: Clock,
  retainedId: string,
  sessionId: string,
): Promise<CacheEntry> {
  const stored = await adapterCall(adapter.name, 'read a retained revision', () =>
    adapter.getDocument('revisions', retainedId),
  );
  if (stored === null) throw new NotFoundError(retainedId, 'retained revision');
  const decoded = decodeSession(sessionId, { ...stored, revision: 0 }, clock.now());
  if (!decoded.ok) {
    throw new CorruptDocumentError(sessionId, adapter.name, null, {
      cause: new Error(decoded.reason),
    });
  }
  const revision = Number(retainedId.slice(sessionId.length + 1));
  decoded.session.revision = revision;
  return {
    session: decoded.session,
    storedRevision: revision,
    storedMessages: [...decoded.session.messages],
    storedHeadText: null,
    deltasSinceFull: 0,
    deltaBytesSinceFull: 0,
    storedBytes: decoded.byteSize,
    durable: true,
    indexStale: false,
  };
}
