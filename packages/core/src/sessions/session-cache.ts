import type { Message, Session } from '../validation/schemas.js';
import type { KnownIdsHolder } from './message-ids.js';

/** What the store knows about a session it holds in memory. */
export interface CacheEntry extends KnownIdsHolder {
  session: Session;
  /** B4: the revision this store instance last read or wrote; null when never saved. */
  storedRevision: number | null;
  /** The message objects as last written, to detect append-only saves and shrinks. */
  storedMessages: Message[];
  /** The head as last written (JSON), to detect unsaved head changes (C4). */
  storedHeadText: string | null;
  /** Delta writes since the last full write. */
  deltasSinceFull: number;
  /** Bytes of those delta writes (approximate), weighed against the full write to compact. */
  deltaBytesSinceFull: number;
  /** Approximate stored size in bytes (A3). */
  storedBytes: number;
  /** C1: whether what is stored was written (or read) durably; flushAll re-persists the rest. */
  durable: boolean;
  /** B7: the last write skipped the index, so the index may be behind this session. */
  indexStale: boolean;
}

/**
 * C4: the live sessions of a store. At most `maxSessions` entries are held strongly, in LRU
 * order; the cache never evicts an entry that `isPinned` says is busy (a live run, unsaved
 * changes, created but not saved, a lock held). Recency is refreshed only by `touch` (loads
 * and saves), never by list() or scans.
 *
 * Eviction drops the strong reference only. While the application still holds an evicted
 * session object, that object stays the live instance: a lookup finds it again (through a
 * WeakRef) and takes it back into the LRU, and `released()` hands it to flushAll and close.
 * So an edit made to a session object after its eviction is never replaced by a fresh read
 * and never missed by a flush; once nothing references the object, it is collected and the
 * next load reads from storage.
 */
export class SessionCache {
  private readonly entries = new Map<string, CacheEntry>();
  /** Evicted sessions the application may still hold, by id. */
  private readonly evicted = new Map<string, WeakRef<Session>>();
  /** Keeps an evicted session's entry alive exactly as long as its session object. */
  private readonly entryOfSession = new WeakMap<Session, CacheEntry>();
  private readonly collected = new FinalizationRegistry<string>((id) => {
    if (this.evicted.get(id)?.deref() === undefined) this.evicted.delete(id);
  });

  constructor(
    private readonly maxSessions: number,
    private readonly isPinned: (entry: CacheEntry) => boolean,
  ) {}

  /** Entries held strongly (evicted but still referenced ones are not counted). */
  get size(): number {
    return this.entries.size;
  }

  /** The live entry of `id`; an evicted one still referenced comes back into the LRU. */
  peek(id: string): CacheEntry | undefined {
    return this.entries.get(id) ?? this.revive(id);
  }

  touch(id: string): CacheEntry | undefined {
    const entry = this.entries.get(id);
    if (entry === undefined) return this.revive(id);
    this.entries.delete(id);
    this.entries.set(id, entry);
    return entry;
  }

  set(id: string, entry: CacheEntry): void {
    this.evicted.delete(id);
    this.entries.delete(id);
    this.entries.set(id, entry);
    this.evictOverflow();
  }

  delete(id: string): void {
    this.entries.delete(id);
    this.evicted.delete(id);
  }

  /** Entries held strongly. */
  values(): CacheEntry[] {
    return [...this.entries.values()];
  }

  /** Evicted entries whose session object is still referenced by the application. */
  released(): CacheEntry[] {
    const alive: CacheEntry[] = [];
    for (const [id, reference] of this.evicted) {
      const entry = this.entryOf(reference);
      if (entry === undefined) this.evicted.delete(id);
      else alive.push(entry);
    }
    return alive;
  }

  ids(): string[] {
    return [...this.entries.keys()];
  }

  private revive(id: string): CacheEntry | undefined {
    const reference = this.evicted.get(id);
    if (reference === undefined) return undefined;
    const entry = this.entryOf(reference);
    if (entry === undefined) {
      this.evicted.delete(id);
      return undefined;
    }
    this.set(id, entry);
    return entry;
  }

  private entryOf(reference: WeakRef<Session>): CacheEntry | undefined {
    const session = reference.deref();
    if (session === undefined) return undefined;
    const entry = this.entryOfSession.get(session);
    // A write may have made another object the live one since (a saved copy, B4).
    return entry?.session === session ? entry : undefined;
  }

  private evictOverflow(): void {
    if (this.entries.size <= this.maxSessions) return;
    for (const [id, entry] of this.entries) {
      if (this.entries.size <= this.maxSessions) return;
      if (this.isPinned(entry)) continue;
      this.entries.delete(id);
      this.entryOfSession.set(entry.session, entry);
      this.evicted.set(id, new WeakRef(entry.session));
      this.collected.register(entry.session, id);
    }
  }
}
