import type { Message, Session } from './schemas.js';

/** What the store knows about a session it holds in memory. */
export interface CacheEntry {
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
 * C4: a bounded LRU of live sessions. It never evicts an entry that `isPinned` says is
 * busy (a live run, unsaved changes, created but not saved, a lock held). Recency is
 * refreshed only by `touch` (loads and saves), never by list() or scans.
 */
export class SessionCache {
  private readonly entries = new Map<string, CacheEntry>();

  constructor(
    private readonly maxSessions: number,
    private readonly isPinned: (entry: CacheEntry) => boolean,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  peek(id: string): CacheEntry | undefined {
    return this.entries.get(id);
  }

  touch(id: string): CacheEntry | undefined {
    const entry = this.entries.get(id);
    if (entry === undefined) return undefined;
    this.entries.delete(id);
    this.entries.set(id, entry);
    return entry;
  }

  set(id: string, entry: CacheEntry): void {
    this.entries.delete(id);
    this.entries.set(id, entry);
    this.evictOverflow();
  }

  delete(id: string): void {
    this.entries.delete(id);
  }

  values(): CacheEntry[] {
    return [...this.entries.values()];
  }

  ids(): string[] {
    return [...this.entries.keys()];
  }

  private evictOverflow(): void {
    if (this.entries.size <= this.maxSessions) return;
    for (const [id, entry] of this.entries) {
      if (this.entries.size <= this.maxSessions) return;
      if (!this.isPinned(entry)) this.entries.delete(id);
    }
  }
}
