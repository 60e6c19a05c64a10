import type { KeyLayout } from './keys.js';
import { CLOCK_ALLOWANCE_MS } from './listing-bounds.js';
import type { ListedObject } from './requests.js';
import { etagKeyPart } from './summary-metadata.js';

/** One listed index entry, its key parsed. */
export interface ListedEntry {
  readonly sessionId: string;
  readonly updatedAt: number;
  /** The document version it summarizes (key form), null when its writer did not know. */
  readonly etag: string | null;
  readonly key: string;
  readonly lastModified: number;
}

/** A session whose document changed since its entry was written: the listing HEADs it. */
export interface UncheckedSession {
  readonly sessionId: string;
  /** The session's entries (none for a document that was never indexed). */
  readonly entries: ListedEntry[];
  /**
   * The largest updatedAt the HEAD can find: the document's LastModified plus the clock
   * allowance (see listing-bounds.ts), or its newest entry's when larger (a document that
   * carries no summary is listed from that entry). Infinity when not known.
   */
  readonly bound: number;
}

export interface Resolution {
  /** Sessions whose document version has an entry: listed from it, nothing else to ask. */
  readonly current: ListedEntry[];
  /** Sessions whose document changed since (or was never indexed): HEAD, then decide. */
  readonly unchecked: UncheckedSession[];
  /** Entries superseded by a newer one of their session. */
  readonly obsolete: string[];
}

/**
 * B7: matches the index entries listed against the session documents listed after them
 * (S3 LIST is strongly consistent, and an entry is only written once its document version
 * is in place, so every entry listed has its document in the second listing unless the
 * session was deleted or quarantined since). A document whose listed ETag names one of its
 * entries is current; any other document is unchecked.
 */
export function resolveEntries(
  keys: KeyLayout,
  entryObjects: readonly ListedObject[],
  documentObjects: readonly ListedObject[],
): Resolution {
  const bySession = new Map<string, ListedEntry[]>();
  for (const object of entryObjects) {
    const parsed = keys.parseIndexEntry(object.key);
    if (parsed === null) continue;
    const entry: ListedEntry = { ...parsed, key: object.key, lastModified: object.lastModified };
    const entries = bySession.get(entry.sessionId);
    if (entries === undefined) bySession.set(entry.sessionId, [entry]);
    else entries.push(entry);
  }
  const current: ListedEntry[] = [];
  const unchecked: UncheckedSession[] = [];
  const obsolete: string[] = [];
  for (const object of documentObjects) {
    const sessionId = keys.documentId('sessions', object.key);
    // H1: not a session document of this prefix (a nested prefix's key, a stray object).
    if (sessionId === null) continue;
    const entries = bySession.get(sessionId) ?? [];
    bySession.delete(sessionId);
    const version = object.etag === '' ? null : etagKeyPart(object.etag);
    const matching = newestFirst(entries.filter((entry) => entry.etag === version));
    if (version === null || matching.length === 0) {
      const bound = Math.max(
        object.lastModified > 0 ? object.lastModified + CLOCK_ALLOWANCE_MS : Infinity,
        ...entries.map((entry) => entry.updatedAt),
      );
      unchecked.push({ sessionId, entries, bound });
      continue;
    }
    current.push(matching[0]!);
    for (const entry of entries) if (entry !== matching[0]) obsolete.push(entry.key);
  }
  // Entries left have no document listed (removed out of band, quarantined, left by a
  // crash): listed from the newest, so core finds the document gone and removes the entry
  // (B7), as it does on every adapter.
  for (const entries of bySession.values()) {
    const [newest, ...older] = newestFirst(entries);
    if (newest !== undefined) current.push(newest);
    for (const entry of older) obsolete.push(entry.key);
  }
  return { current, unchecked, obsolete };
}

/**
 * Newest first: the larger updatedAt, then the one written last. updatedAt first because
 * a listing that carried an older summary over may write it after the entry of a newer
 * save of the same version (a summary too long for metadata, written after its document).
 */
export function newestFirst(entries: readonly ListedEntry[]): ListedEntry[] {
  return [...entries].sort(
    (left, right) => right.updatedAt - left.updatedAt || right.lastModified - left.lastModified,
  );
}
