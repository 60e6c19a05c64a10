import { InvalidInputError } from '../errors/input-errors.js';
import { RevisionConflictError } from '../errors/storage-errors.js';
import type { RefreshOutcome } from '../runs/run-host.js';
import { assertValidId } from '../validation/ids.js';
import type { Session } from '../validation/schemas.js';
import { findOddField } from '../validation/session-validation.js';
import type { CacheEntry, SessionCache } from './session-cache.js';
import type { SessionPersistence } from './session-persistence.js';
import type { SaveOptions } from './session-types.js';

/**
 * The live instance of each session (C4): read from storage once however many callers ask
 * at the same time, refreshed in place when another instance changed what is stored, and
 * adopted from a caller's own object only at the revision it was read at (B4). Except for
 * `entryFor`, callers hold the session's lock.
 */
export class LiveSessions {
  private readonly loadsInFlight = new Map<string, Promise<CacheEntry>>();

  constructor(
    private readonly cache: SessionCache,
    private readonly persistence: SessionPersistence,
  ) {}

  /** Whether a read from storage is in flight; the cache must not evict what it returns. */
  isLoading(id: string): boolean {
    return this.loadsInFlight.has(id);
  }

  /** The live cache entry of a session, read from storage once (single flight, C4). */
  async entryFor(id: string): Promise<CacheEntry> {
    const cached = this.cache.touch(id);
    if (cached !== undefined) return cached;
    let loading = this.loadsInFlight.get(id);
    if (loading === undefined) {
      loading = this.persistence.read(id).then((entry) => {
        const raced = this.cache.peek(id);
        if (raced !== undefined) return raced;
        this.cache.set(id, entry);
        return entry;
      });
      loading = loading.finally(() => this.loadsInFlight.delete(id));
      this.loadsInFlight.set(id, loading);
    }
    return loading;
  }

  async write(entry: CacheEntry, options: SaveOptions): Promise<Session> {
    const saved = await this.persistence.write(entry, options);
    this.cache.set(entry.session.id, entry);
    return saved;
  }

  /** `entryForSave` for a cached session, without an await; undefined when not cached. */
  cachedEntryForSave(session: Session): CacheEntry | undefined {
    const entry = this.cache.peek(session.id);
    if (entry === undefined) return undefined;
    if (entry.session !== session && session.revision !== entry.storedRevision) {
      throw new RevisionConflictError(session.id, session.revision, entry.storedRevision);
    }
    return entry;
  }

  /**
   * Picks the cache entry a caller's session object belongs to (B4). A copy at the stored
   * revision is checked here but adopted by the write only once it lands (B5, C4).
   */
  async entryForSave(session: Session): Promise<CacheEntry> {
    const id = session.id;
    let entry = this.cache.peek(id);
    if (entry === undefined) {
      entry = (await this.persistence.readOrNull(id)) ?? undefined;
      if (entry === undefined) {
        throw new InvalidInputError(
          `Session "${id}" does not exist; create it with store.create()`,
        );
      }
    }
    if (entry.session !== session && session.revision !== entry.storedRevision) {
      throw new RevisionConflictError(id, session.revision, entry.storedRevision);
    }
    return entry;
  }

  /** Re-reads a session another instance may have changed, unless this one has unsaved edits. */
  async refreshIfClean(entry: CacheEntry, id?: string): Promise<RefreshOutcome> {
    if (this.persistence.isDirty(entry)) return 'dirty';
    return this.replaceFromStorage(entry, id);
  }

  /**
   * Updates the live instance in place from what is stored now. `id` is the session's id as
   * the caller knows it (a reload's argument): the live object's own `id` is the
   * application's to change, and what it holds there never reaches the adapter unchecked (A1).
   */
  async replaceFromStorage(entry: CacheEntry, id?: string): Promise<RefreshOutcome> {
    const sessionId = assertValidId(id ?? entry.session.id);
    const fresh = await this.persistence.readOrNull(sessionId);
    if (fresh === null) return 'deleted';
    if (fresh.storedRevision === entry.storedRevision && !this.persistence.isDirty(entry)) {
      return 'unchanged';
    }
    const live = entry.session as Record<string, unknown>;
    assertReplaceable(live, sessionId);
    for (const key of Object.keys(live)) delete live[key];
    // Defined, not assigned: a stored field named `__proto__` stays a field.
    for (const [key, value] of Object.entries(fresh.session)) {
      Object.defineProperty(live, key, {
        value,
        writable: true,
        enumerable: true,
        configurable: true,
      });
    }
    entry.storedRevision = fresh.storedRevision;
    entry.storedMessages = fresh.storedMessages;
    entry.storedHeadText = fresh.storedHeadText;
    entry.deltasSinceFull = fresh.deltasSinceFull;
    entry.deltaBytesSinceFull = fresh.deltaBytesSinceFull;
    entry.storedBytes = fresh.storedBytes;
    entry.durable = true;
    entry.indexStale = false;
    return 'refreshed';
  }
}

/**
 * Issue 35: a live session the application changed after its save so that its fields cannot
 * be replaced in place (made non-extensible, a field made non-configurable or read-only) is
 * refused before any field changes; replacing it half-way used to leave it without its id.
 */
function assertReplaceable(live: Record<string, unknown>, id: string): void {
  const odd = Object.isExtensible(live)
    ? findOddField(live)
    : { field: '', reason: 'is frozen, sealed or not extensible' };
  if (odd === null) return;
  const what = odd.field === '' ? 'the session object' : `its field \`${odd.field}\``;
  throw new InvalidInputError(
    `Session "${id}" cannot be refreshed in place: ${what} ${odd.reason}. Nothing was changed. ` +
      'Save a copy whose fields are plain values (it becomes the live session), then reload.',
    { path: odd.field },
  );
}
