/**
 * Folder locks/: the per-session async mutex (D1), its identity across an id rotation (D2),
 * and re-entry detection; no lock is held across slow calls (D3). Fencing a stale run (D4) is
 * the pending turn's stream id, checked in runs/.
 */

import { AsyncLocalStorage } from 'node:async_hooks';
import { LockReentryError } from '../errors/input-errors.js';

/** One async mutex. Its identity is the object: ids are only names that point at it. */
interface LockEntry {
  readonly serial: number;
  /** The name it is kept under in the registry (a mutex is never renamed, only merged). */
  readonly name: string;
  /** Resolves when the last one queued so far releases. */
  tail: Promise<void>;
  holders: number;
  waiters: number;
  /**
   * D2: the mutex this one was merged into by a rename. Ids no longer name a merged
   * mutex; whoever was still queued on it moves to this one once its turn comes.
   */
  mergedInto: LockEntry | null;
}

/** One caller's place in one mutex's queue. */
interface Turn {
  readonly entry: LockEntry;
  /** Resolves when the caller before this one lets go. */
  readonly previous: Promise<void>;
  /** Lets the caller after this one in. */
  readonly done: () => void;
}

let nextSerial = 1;

/**
 * D1/D2: one async mutex per session in a process.
 * - Re-entry from the async context that holds a lock is detected through
 *   AsyncLocalStorage and raised as LockReentryError instead of deadlocking.
 * - `withLocks` takes several mutexes at once: its place in every queue is taken in one
 *   step, so whoever asks for any of them later waits for it (a rename holds both ids).
 * - `alias(newId, oldId)` makes both ids name one mutex from then on, also once it was
 *   pruned and made anew. If `newId` had a mutex of its own, it is merged: a caller still
 *   queued on it moves to the shared one instead of entering beside its holder.
 * - Idle entries are pruned as soon as nobody holds or awaits them, so the registry does
 *   not grow with the number of sessions ever touched.
 */
export class LockRegistry {
  /** Mutexes by name; a renamed id's name is the id it was renamed from (see `alias`). */
  private readonly entries = new Map<string, LockEntry>();
  /**
   * D2: for every id a rename joined to another, the id whose name they share. Kept for
   * the life of the store (one small entry per rename), so the two ids stay one lock even
   * after their mutex was pruned and made anew.
   */
  private readonly joined = new Map<string, string>();
  private readonly held = new AsyncLocalStorage<ReadonlySet<LockEntry>>();

  /** Number of mutexes alive (for tests of pruning). */
  get size(): number {
    return this.entries.size;
  }

  /** Whether the current async context holds the lock of `id`. */
  holds(id: string): boolean {
    const entry = this.entries.get(this.nameOf(id));
    return entry !== undefined && (this.held.getStore()?.has(entry) ?? false);
  }

  /** Whether anyone holds or awaits the lock of `id`. */
  isBusy(id: string): boolean {
    const entry = this.entries.get(this.nameOf(id));
    return entry !== undefined && entry.holders + entry.waiters > 0;
  }

  /** A stable token for the mutex behind `id`, to compare identities in tests. */
  identity(id: string): number {
    return this.entryFor(id).serial;
  }

  async withLock<T>(id: string, fn: () => Promise<T>): Promise<T> {
    if (this.holds(id)) throw new LockReentryError(id);
    return this.withLocks([id], fn);
  }

  /** Runs `fn` under the lock of `id`, or directly when this context already holds it. */
  withLockIfNotHeld<T>(id: string, fn: () => Promise<T>): Promise<T> {
    // Not async: both ways return the promise they make (one layer fewer on every save).
    if (this.holds(id)) return fn();
    return this.withLocks([id], fn);
  }

  /**
   * `withLockIfNotHeld` for work of the store's own that awaits no caller's code while it
   * holds the lock (a save; its event listeners run synchronously and are not awaited): the
   * lock is taken the same way, but the async context is not marked as holding it, which
   * costs a context frame and a set per call (about a tenth of a save's own time in a
   * profile). Nothing `fn` awaits may ask for the same lock: it would wait for itself. An
   * event listener called from inside that asks for it waits its turn, which comes when
   * this call returns.
   */
  async withLockUnmarked<T>(id: string, fn: () => Promise<T>): Promise<T> {
    const heldNow = this.held.getStore();
    const entry = this.entries.get(this.nameOf(id));
    if (entry !== undefined && heldNow?.has(entry) === true) return fn();
    const turns = this.acquireIdle([id], heldNow) ?? (await this.acquire([id], heldNow));
    try {
      return await fn();
    } finally {
      this.release(turns);
    }
  }

  /**
   * Runs `fn` holding the locks of all `ids` (those this context holds already are kept
   * as they are). Its place in each queue is taken at once, before waiting for any.
   */
  async withLocks<T>(ids: readonly string[], fn: () => Promise<T>): Promise<T> {
    const heldNow = this.held.getStore();
    const turns = this.acquireIdle(ids, heldNow) ?? (await this.acquire(ids, heldNow));
    const nextHeld = new Set(heldNow ?? []);
    for (const turn of turns) nextHeld.add(turn.entry);
    try {
      return await this.held.run(nextHeld, fn);
    } finally {
      this.release(turns);
    }
  }

  /**
   * D2: makes `newId` name the same mutex as `oldId`, for good (merging the one `newId`
   * had: whoever still waits on it moves to the shared one).
   */
  alias(newId: string, oldId: string): void {
    const name = this.nameOf(oldId);
    const absorbedName = this.nameOf(newId);
    if (absorbedName === name) return;
    const target = this.entryFor(name);
    const absorbed = this.entries.get(absorbedName);
    if (absorbed !== undefined) {
      absorbed.mergedInto = target;
      this.entries.delete(absorbedName);
    }
    this.joined.set(absorbedName, name);
    for (const [id, joinedTo] of this.joined) {
      if (joinedTo === absorbedName) this.joined.set(id, name);
    }
  }

  /** Runs `fn` outside every held lock's context (timers and background work use this). */
  detached<T>(fn: () => T): T {
    return this.held.exit(fn);
  }

  private async acquire(
    ids: readonly string[],
    heldNow: ReadonlySet<LockEntry> | undefined,
  ): Promise<Turn[]> {
    for (;;) {
      const wanted = [...new Set(ids.map((id) => this.entryFor(id)))].filter(
        (entry) => !(heldNow?.has(entry) ?? false),
      );
      const turns = wanted.map((entry) => this.queue(entry));
      try {
        // One lock (a save, a load) waits for its turn alone, without a Promise.all.
        if (turns.length === 1) await turns[0]!.previous;
        else await Promise.all(turns.map((turn) => turn.previous));
      } finally {
        for (const turn of turns) {
          turn.entry.waiters--;
          turn.entry.holders++;
        }
      }
      // A rename merged a mutex we queued on while we waited: its holder let go of it for
      // good, and the id now names the mutex it was merged into. Queue again there.
      if (turns.every((turn) => turn.entry.mergedInto === null)) return turns;
      this.release(turns);
    }
  }

  /**
   * The common case of a save or a load, taken without waiting: one id whose mutex nobody
   * holds or awaits (and this context does not hold). Its turn is taken at once, as
   * `acquire` would after one idle await; null in any other case.
   */
  private acquireIdle(
    ids: readonly string[],
    heldNow: ReadonlySet<LockEntry> | undefined,
  ): Turn[] | null {
    if (ids.length !== 1) return null;
    const entry = this.entryFor(ids[0]!);
    if (entry.holders + entry.waiters > 0 || (heldNow?.has(entry) ?? false)) return null;
    const turn = this.queue(entry);
    entry.waiters--;
    entry.holders++;
    return [turn];
  }

  /** Takes the next place in `entry`'s queue: wait for `previous`, then hold until `done`. */
  private queue(entry: LockEntry): Turn {
    entry.waiters++;
    const previous = entry.tail;
    let done!: () => void;
    entry.tail = new Promise<void>((resolve) => {
      done = resolve;
    });
    return { entry, previous, done };
  }

  private release(turns: readonly Turn[]): void {
    for (const turn of turns) {
      turn.entry.holders--;
      turn.done();
      this.prune(turn.entry);
    }
  }

  /** The name of the mutex of `id`: its own, or the one a rename joined it to. */
  private nameOf(id: string): string {
    return this.joined.get(id) ?? id;
  }

  private entryFor(id: string): LockEntry {
    const name = this.nameOf(id);
    let entry = this.entries.get(name);
    if (entry === undefined) {
      entry = {
        serial: nextSerial++,
        name,
        tail: Promise.resolve(),
        holders: 0,
        waiters: 0,
        mergedInto: null,
      };
      this.entries.set(name, entry);
    }
    return entry;
  }

  private prune(entry: LockEntry): void {
    if (entry.holders + entry.waiters > 0) return;
    // O(1): a merged mutex was already removed, and no other is kept under its name.
    if (this.entries.get(entry.name) === entry) this.entries.delete(entry.name);
  }
}
