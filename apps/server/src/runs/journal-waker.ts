import type { SessionStore } from '@keepsake/core';

export interface JournalWatch {
  /** Resolves on the run's next append or state change in this process. */
  readonly changed: Promise<void>;
  /** Stops watching (always call it, whether or not `changed` resolved). */
  dispose(): void;
}

/**
 * Wakes journal tails of one store as soon as that store appends to a run's journal or a
 * run changes state, so a tail of a run streamed by this process never waits for its poll
 * interval. Runs streamed by another process are found by polling (see journal-tail.ts).
 */
export class JournalWaker {
  private readonly waiters = new Map<string, Set<() => void>>();
  private readonly unsubscribe: () => void;

  constructor(store: SessionStore) {
    this.unsubscribe = store.on((event) => {
      if (event.type === 'append' || event.type === 'run') this.wake(event.sessionId, event.runId);
      else if (event.type === 'recovery' && event.runId !== null) {
        this.wake(event.sessionId, event.runId);
      }
    });
  }

  /** Take the watch before reading the journal, so an append in between is not missed. */
  watch(sessionId: string, runId: string): JournalWatch {
    const key = `${sessionId}/${runId}`;
    let resolveChanged!: () => void;
    const changed = new Promise<void>((resolve) => {
      resolveChanged = resolve;
    });
    const waiters = this.waiters.get(key) ?? new Set<() => void>();
    const dispose = () => {
      waiters.delete(resolveChanged);
      if (waiters.size === 0 && this.waiters.get(key) === waiters) this.waiters.delete(key);
    };
    waiters.add(resolveChanged);
    this.waiters.set(key, waiters);
    return { changed, dispose };
  }

  close(): void {
    this.unsubscribe();
    for (const waiters of this.waiters.values()) for (const resolve of waiters) resolve();
    this.waiters.clear();
  }

  private wake(sessionId: string, runId: string): void {
    const waiters = this.waiters.get(`${sessionId}/${runId}`);
    if (waiters !== undefined) for (const resolve of waiters) resolve();
  }
}
