import { detachedRecord } from '../../journal/journal-record.js';
import type { JournalRecord } from '../../validation/schemas.js';

/**
 * H4: how many records a follower holds for its consumer between two looks. Beyond it the
 * follower drops what it holds and reads the journal instead, so a slow consumer costs a
 * read, never memory without bound.
 */
export const FOLLOWER_BUFFER = 256;

/** What this store told one follower since it last looked. */
export interface FollowerWatch {
  /**
   * Resolves true at the run's next append or state change in this store (at once if one
   * came since the last call), false after `timeoutMs` or once `signal` aborts.
   */
  wait(timeoutMs: number, signal: AbortSignal | undefined): Promise<boolean>;
  /**
   * The records this store appended that follow on from `after`, in order. `complete` is
   * false when the follower must read the journal instead to be sure it missed nothing (a
   * sequence missing from what it was handed, more than FOLLOWER_BUFFER held, or a state
   * change that wrote no record here).
   */
  take(after: number): { records: JournalRecord[]; complete: boolean };
  dispose(): void;
}

interface Watcher {
  records: JournalRecord[];
  overflowed: boolean;
  stateChanged: boolean;
  woken: boolean;
  wake: (() => void) | null;
}

/**
 * Wakes the followers of a run as soon as this store appends to its journal (handing them
 * the record, so following a run streamed here costs no read) or its turn changes state.
 * Runs streamed by another instance are found by polling (follow-run.ts).
 */
export class RunFollowers {
  private readonly watchers = new Map<string, Set<Watcher>>();

  /** Runs followed in this store (diagnostics). */
  get size(): number {
    return this.watchers.size;
  }

  /** Take the watch before reading the journal, so an append in between is not missed. */
  watch(runId: string): FollowerWatch {
    const watcher: Watcher = {
      records: [],
      overflowed: false,
      stateChanged: false,
      woken: false,
      wake: null,
    };
    const set = this.watchers.get(runId) ?? new Set<Watcher>();
    set.add(watcher);
    this.watchers.set(runId, set);
    return {
      wait: (timeoutMs, signal) => waitFor(watcher, timeoutMs, signal),
      take: (after) => take(watcher, after),
      dispose: () => {
        set.delete(watcher);
        if (set.size === 0 && this.watchers.get(runId) === set) this.watchers.delete(runId);
        wake(watcher);
      },
    };
  }

  /** A record this store appended (any writer: the run, a cancel, a repair). */
  appended(record: JournalRecord): void {
    const set = this.watchers.get(record.runId);
    if (set === undefined) return;
    for (const watcher of set) {
      if (watcher.records.length < FOLLOWER_BUFFER) watcher.records.push(detachedRecord(record));
      else watcher.overflowed = true;
      wake(watcher);
    }
  }

  /** The run's turn changed state here (started, ended, repaired): look again. */
  changed(runId: string): void {
    const set = this.watchers.get(runId);
    if (set === undefined) return;
    for (const watcher of set) {
      watcher.stateChanged = true;
      wake(watcher);
    }
  }

  /** Wakes every follower (the store is closing: they stop). */
  wakeAll(): void {
    for (const set of this.watchers.values()) {
      for (const watcher of set) {
        watcher.stateChanged = true;
        wake(watcher);
      }
    }
  }
}

function wake(watcher: Watcher): void {
  watcher.woken = true;
  const resolve = watcher.wake;
  watcher.wake = null;
  resolve?.();
}

function waitFor(
  watcher: Watcher,
  timeoutMs: number,
  signal: AbortSignal | undefined,
): Promise<boolean> {
  if (watcher.woken || signal?.aborted) {
    const woken = watcher.woken;
    watcher.woken = false;
    return Promise.resolve(woken);
  }
  return new Promise<boolean>((resolve) => {
    const finish = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', finish);
      watcher.wake = null;
      const woken = watcher.woken;
      watcher.woken = false;
      resolve(woken);
    };
    // Real time, not the store's clock: a poll only decides how soon a change is seen,
    // never what it means (the store's clock decides that, see follow-run.ts).
    const timer = setTimeout(finish, timeoutMs);
    signal?.addEventListener('abort', finish, { once: true });
    watcher.wake = finish;
  });
}

function take(watcher: Watcher, after: number): { records: JournalRecord[]; complete: boolean } {
  const held = watcher.records;
  let complete = !watcher.overflowed && !watcher.stateChanged;
  watcher.records = [];
  watcher.overflowed = false;
  watcher.stateChanged = false;
  // Appends of one journal may settle out of order across writers (a cancel jumps the
  // queue): hand over only an unbroken run of sequences starting right after `after`.
  const records = held.filter((record) => record.sequence > after);
  records.sort((a, b) => a.sequence - b.sequence);
  let expected = after + 1;
  let unbroken = 0;
  for (const record of records) {
    if (record.sequence !== expected) {
      complete = false;
      break;
    }
    expected++;
    unbroken++;
  }
  return { records: records.slice(0, unbroken), complete };
}
