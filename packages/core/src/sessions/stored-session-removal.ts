import type { StorageAdapter } from '../adapter/adapter.js';
import { adapterCall } from '../adapter/adapter-call.js';
import { idsWithPrefix } from '../adapter/listed-ids.js';
import { removeRunLocations } from '../runs/run-locations.js';

const PAGE = 500;

/** B5: the ids (`<sessionId>.<revision>`) of the revisions retained before shrinks. */
export async function listRetainedRevisionIds(
  adapter: StorageAdapter,
  sessionId: string,
): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | null = null;
  do {
    const page = await adapterCall(adapter.name, 'list retained revisions', () =>
      adapter.listDocuments('revisions', { prefix: `${sessionId}.`, cursor, limit: PAGE }),
    );
    ids.push(...idsWithPrefix(page.ids, `${sessionId}.`));
    cursor = page.nextCursor;
  } while (cursor !== null);
  return ids;
}

/** The revision number of a retained revision id, or null for a foreign id. */
export function retainedRevisionOf(sessionId: string, retainedId: string): number | null {
  const revision = Number(retainedId.slice(sessionId.length + 1));
  return Number.isInteger(revision) && revision > 0 ? revision : null;
}

/**
 * B8: removes everything stored for a session. The index entry goes first, so once a
 * delete started the session is never listed again; then the document, its journals, its
 * lifecycle state and its retained revisions. Returns whether the document existed.
 */
export async function removeStoredSession(
  adapter: StorageAdapter,
  sessionId: string,
): Promise<boolean> {
  const call = <T>(operation: string, fn: () => Promise<T>) =>
    adapterCall(adapter.name, operation, fn);
  const existed =
    (await call('read a session', () => adapter.getDocument('sessions', sessionId))) !== null;
  await call('update the session index', () =>
    adapter.deleteIndexEntry(sessionId, { durable: true }),
  );
  await call('delete a session', () =>
    adapter.deleteDocument('sessions', sessionId, { durable: true }),
  );
  // E8: the runs' locations first, while their journals still say which runs there were.
  const runIds = await call('list journals', () => adapter.listLogs(sessionId));
  await removeRunLocations(adapter, sessionId, runIds);
  await call('delete journals', () => adapter.deleteLogs(sessionId, { durable: true }));
  await call('delete lifecycle state', () =>
    adapter.deleteDocument('lifecycle', sessionId, { durable: true }),
  );
  for (const retained of await listRetainedRevisionIds(adapter, sessionId)) {
    await call('delete a retained revision', () =>
      adapter.deleteDocument('revisions', retained, { durable: true }),
    );
  }
  return existed;
}
