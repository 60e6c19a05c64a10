import { AsyncLocalStorage } from 'node:async_hooks';
import { LockReentryError } from './input-errors.js';

/** One async mutex. Its identity is the object: ids are only names that point at it. */
interface LockEntry {
  readonly serial: number;
  /** Resolves when the current holder releases. */
  tail: Promise<void>;
  holders: number;
  waiters: number;
}

let nextSerial = 1;

/**
 * D1/D2: one async mutex per session in a process.
 * - Re-entry from the async context that holds a lock is detected through
 *   AsyncLocalStorage and raised as LockReentryError instead of deadlocking.
 * - `alias(newId, oldId)` points a rotated id at the same mutex, also when the old id's
 *   entry was already pruned.
 * - Idle entries are pruned as soon as nobody holds or awaits them, so the registry does
 *   not grow with the number of sessions ever touched.
 */
export class LockRegistry {
  private readonly entries = new Map<string, LockEntry>();
  private readonly held = new AsyncLocalStorage<ReadonlySet<LockEntry>>();

  /** Number of ids with a live entry (for tests of pruning). */
  get size(): number {
    return this.entries.size;
  }

  /** Whether the current async context holds the lock of `id`. */
  holds(id: string): boolean {
    const entry = this.entries.get(id);
    return entry !== undefined && (this.held.getStore()?.has(entry) ?? false);
  }

  /** Whether anyone holds or awaits the lock of `id`. */
  isBusy(id: string): boolean {
    const entry = this.entries.get(id);
    return entry !== undefined && entry.holders + entry.waiters > 0;
  }

  /** A stable token for the mutex behind `id`, to compare identities in tests. */
  identity(id: string): number {
    return this.entryFor(id).serial;
  }

  async withLock<T>(id: string, fn: () => Promise<T>): Promise<T> {
    const entry = this.entryFor(id);
    const heldNow = this.held.getStore();
    if (heldNow?.has(entry)) throw new LockReentryError(id);
    entry.waiters++;
    const previous = entry.tail;
    let release!: () => void;
    entry.tail = new Promise<void>((resolve) => {
      release = resolve;
    });
    try {
      await previous;
    } finally {
      entry.waiters--;
      entry.holders++;
    }
    const nextHeld = new Set(heldNow ?? []);
    nextHeld.add(entry);
    try {
      return await this.held.run(nextHeld, fn);
    } finally {
      entry.holders--;
      release();
      this.prune(entry);
    }
  }

  /** Runs `fn` under the lock of `id`, or directly when this context already holds it. */
  async withLockIfNotHeld<T>(id: string, fn: () => Promise<T>): Promise<T> {
    if (this.holds(id)) return fn();
    return this.withLock(id, fn);
  }

  /** D2: makes `newId` name the same mutex as `oldId`. */
  alias(newId: string, oldId: string): void {
    const entry = this.entryFor(oldId);
    this.entries.set(newId, entry);
  }

  /** Runs `fn` outside every held lock's context (timers and background work use this). */
  detached<T>(fn: () => T): T {
    return this.held.exit(fn);
  }

  private entryFor(id: string): LockEntry {
    let entry = this.entries.get(id);
    if (entry === undefined) {
      entry = { serial: nextSerial++, tail: Promise.resolve(), holders: 0, waiters: 0 };
      this.entries.set(id, entry);
    }
    return entry;
  }

  private prune(entry: LockEntry): void {
    if (entry.holders + entry.waiters > 0) return;
    for (const [id, candidate] of this.entries) {
      if (candidate === entry) this.entries.delete(id);
    }
  }
}
