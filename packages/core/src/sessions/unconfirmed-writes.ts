import type { DocumentWrite, StorageAdapter, StoredDocument } from '../adapter/adapter.js';
import { adapterCall } from '../adapter/adapter-call.js';
import type { Clock } from '../time/clock.js';
import type { Session } from '../validation/schemas.js';
import { decodeSession, deepFreeze } from './documents/document-codec.js';
import { headText } from './documents/head-text.js';
import type { CacheEntry } from './session-cache.js';

/** A session write whose `putDocument` rejected: it may have been stored all the same. */
export interface UnconfirmedWrite {
  /** The revision the write expected to replace (null: a create). */
  readonly expectedRevision: number | null;
  /** What was sent: its revision, kind and exact text. */
  readonly write: DocumentWrite;
  /** The session object written (the live one, or a caller's copy of it). */
  readonly session: Session;
}

/**
 * B2, B4: what a store does after a session write whose outcome it does not know.
 *
 * A `putDocument` can reject after its document landed: the rename happened but the fsync of
 * its directory failed (`WriteOutcomeUnknownError`), or a networked backend stored it and the
 * answer was lost. Left alone, the store's next save would expect the old revision, meet its
 * own write, and report it as another writer's (`RevisionConflictError`: "expected 1, found
 * 2"). So a rejected write is remembered, and before the session's next write the stored
 * document is read once:
 * - at the expected revision: the write did not land; the next write goes ahead as planned;
 * - at the write's revision with exactly its text: it landed. The cache entry takes what is
 *   stored as its stored state and the session written as its live one, as if the write had
 *   resolved; the next write then goes on from there (it rewrites the document in full, and
 *   with the index entry, since the store cannot tell whether either was made durable);
 * - anything else: another writer; the next write is refused as a conflict, as it should be.
 * Remembered per cache entry (weakly): an entry replaced by a fresh read has nothing to settle.
 */
export class UnconfirmedWrites {
  private readonly writes = new WeakMap<CacheEntry, UnconfirmedWrite>();

  constructor(
    private readonly adapter: StorageAdapter,
    private readonly clock: Clock,
  ) {}

  /** The write of `entry` rejected; its outcome is settled before the entry's next write. */
  remember(entry: CacheEntry, write: UnconfirmedWrite): void {
    this.writes.set(entry, write);
  }

  /** Call before writing `entry`, under the session's lock. */
  /** Whether a write of `entry` that rejected is still to be settled. */
  has(entry: CacheEntry): boolean {
    return this.writes.has(entry);
  }

  async settle(entry: CacheEntry): Promise<void> {
    const pending = this.writes.get(entry);
    if (pending === undefined) return;
    // Refreshed from storage since (a reload): what it read is what is stored.
    if (entry.storedRevision !== pending.expectedRevision) {
      this.writes.delete(entry);
      return;
    }
    const { adapter } = this;
    // A failure here keeps the write remembered: the next attempt asks again.
    const stored = await adapterCall(adapter.name, 'check whether a write landed', () =>
      adapter.getDocument('sessions', pending.session.id),
    );
    this.writes.delete(entry);
    if (stored !== null && isThatWrite(stored, pending.write)) {
      this.adopt(entry, pending.session, stored);
    }
  }

  private adopt(entry: CacheEntry, session: Session, stored: StoredDocument): void {
    const decoded = decodeSession(session.id, stored, this.clock.now());
    if (!decoded.ok) return;
    const written = decoded.session;
    // What is stored, decoded: not the caller's message objects, which the caller may have
    // changed in place since the write, so that the next write compares with what landed.
    for (const message of written.messages) deepFreeze(message);
    entry.session = session;
    session.revision = stored.revision;
    session.updatedAt = written.updatedAt;
    entry.storedRevision = stored.revision;
    entry.storedMessages = written.messages;
    entry.storedHeadText = headText(written);
    entry.deltasSinceFull = stored.deltas.length;
    entry.deltaBytesSinceFull = decoded.byteSize - stored.base.length;
    entry.storedBytes = decoded.byteSize;
    // Whether it is durable, and whether its index entry was written, is what is unknown.
    entry.durable = false;
    entry.indexStale = true;
  }
}

/** Whether `stored` is the document `write` produced (same revision, same text). */
function isThatWrite(stored: StoredDocument, write: DocumentWrite): boolean {
  if (stored.revision !== write.revision) return false;
  if (write.kind === 'full') return stored.deltas.length === 0 && stored.base === write.text;
  return stored.deltas.at(-1) === write.text;
}
