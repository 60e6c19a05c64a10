import type { SessionStore } from '@keepsake/core';

export interface JournalWatch {
  /** Resolves on the run's next append or state change seen by this store. */
  readonly changed: Promise<void>;
  /** Stops watching; call it whether or not `changed` resolved. */
  dispose(): void;
}

/**
 * Wakes the tails of one store's runs as soon as that store appends to a run's journal or a
 * run changes state (started, completed, cancelled, recovered), so a reader of a run this
 * process streams never waits for the poll interval. Runs another process streams are
 * found by polling (journal-tail.ts).
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
    let wake!: () => void;
    const changed = new Promise<void>((resolve) => {
      wake = resolve;
    });
    let waiters = this.waiters.get(key);
    if (waiters === undefined) {
      waiters = new Set();
      this.waiters.set(key, waiters);
    }
    waiters.add(wake);
    const dispose = () => {
      waiters.delete(wake);
      if (waiters.size === 0 && this.waiters.get(key) === waiters) this.waiters.delete(key);
    };
    return { changed, dispose };
  }

  close(): void {
    this.unsubscribe();
    for (const waiters of this.waiters.values()) for (const wake of waiters) wake();
    this.waiters.clear();
  }

  private wake(sessionId: string, runId: string): void {
    const waiters = this.waiters.get(`${sessionId}/${runId}`);
    if (waiters !== undefined) for (const wake of waiters) wake();
  }
}
