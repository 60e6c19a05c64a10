import type { StorageAdapter } from '../../adapter/adapter.js';
import { adapterCall } from '../../adapter/adapter-call.js';
import type { Clock } from '../../time/clock.js';
import { decodeSession, summaryOf } from '../documents/document-codec.js';

/** hasDocument calls a listing makes at once (a page holds up to 1000 entries). */
const CHECKS_AT_ONCE = 32;

/**
 * B7: which of these session ids have a document. A listing asks before it shows a page, so
 * an index entry whose document is gone (written out of band, left by a crash between a
 * document's removal and its entry's, or by a quarantine) is never listed. `hasDocument` is a
 * stat, an EXISTS or a HEAD: a page costs one per entry, far less than reading documents.
 */
export async function storedSessionIds(
  adapter: StorageAdapter,
  ids: readonly string[],
): Promise<Set<string>> {
  const stored = new Set<string>();
  for (let start = 0; start < ids.length; start += CHECKS_AT_ONCE) {
    const slice = ids.slice(start, start + CHECKS_AT_ONCE);
    const found = await Promise.all(
      slice.map((id) =>
        adapterCall(adapter.name, 'check a session', () => adapter.hasDocument('sessions', id)),
      ),
    );
    for (const [index, id] of slice.entries()) if (found[index] === true) stored.add(id);
  }
  return stored;
}

/**
 * B7: removes the index entry of a session that has no document, so a ghost is not only
 * hidden but gone. Another instance may create the session between the check that found no
 * document and this removal; so the document is checked again afterwards, and when one is
 * there now, its entry is written back from it (that instance's own entry may have landed
 * before the removal). Not durable: a ghost a power loss brings back is removed again.
 */
export async function removeEntryWithoutDocument(
  adapter: StorageAdapter,
  clock: Clock,
  id: string,
): Promise<void> {
  const call = <T>(operation: string, fn: () => Promise<T>) =>
    adapterCall(adapter.name, operation, fn);
  await call('update the session index', () => adapter.deleteIndexEntry(id, { durable: false }));
  if (!(await call('check a session', () => adapter.hasDocument('sessions', id)))) return;
  const stored = await call('read a session', () => adapter.getDocument('sessions', id));
  if (stored === null) return;
  const decoded = decodeSession(id, stored, clock.now());
  // A document that does not parse is quarantined by its next load, not listed.
  if (!decoded.ok) return;
  const summary = summaryOf(decoded.session);
  await call('update the session index', () => adapter.putIndexEntry(summary, { durable: false }));
}
