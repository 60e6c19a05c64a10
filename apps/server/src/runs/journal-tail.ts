import {
  type JournalEventType,
  type JournalRecord,
  NotFoundError,
  type RunTerminalState,
  type SessionStore,
} from '@keepsake/core';
import type { JournalWaker } from './journal-waker.js';

export type TailItem =
  | { kind: 'record'; record: JournalRecord }
  | { kind: 'end'; reason: TailEndReason; terminalState: RunTerminalState | null };

export type TailEndReason = 'terminal' | 'session-deleted' | 'journal-gap';

export interface TailOptions {
  store: SessionStore;
  waker: JournalWaker;
  sessionId: string;
  runId: string;
  /** Records with a greater sequence are streamed (the SSE `Last-Event-ID`). */
  afterSequence: number;
  signal: AbortSignal;
  /** Poll interval for runs another process streams. */
  pollIntervalMs: number;
  /**
   * With no new record for this long, and the run not streamed here, the tail loads the
   * session: a run whose process died is then recovered (F1), which appends its
   * interrupted record, which ends this tail.
   */
  recoveryProbeMs: number;
  /** Whether this process streams the run (no recovery probe is needed then). */
  isLocal(): boolean;
}

/** Record types after which nothing more of the run is worth waiting for. */
const endingTypes = new Set<JournalEventType>([
  'done',
  'error',
  'cancel',
  'tool_limit',
  'interrupted',
  'stream_end',
]);

const stateByType: Partial<Record<JournalEventType, RunTerminalState>> = {
  done: 'completed',
  error: 'errored',
  cancel: 'interrupted-by-user',
  tool_limit: 'tool-limit-reached',
  interrupted: 'interrupted-by-crash',
};

/**
 * Follows a run's journal from a sequence until the run ends. The journal is the single
 * source of truth: a tail reads the same records whether the run is streamed by this
 * process (woken at once by the store's append events), by another process on the same
 * backend (found by polling), or by nobody any more (recovered, then ended).
 */
export async function* tailJournal(options: TailOptions): AsyncGenerator<TailItem> {
  const { store, waker, sessionId, runId, signal } = options;
  let after = options.afterSequence;
  let lastProgressAt = Date.now();
  while (!signal.aborted) {
    const watch = waker.watch(sessionId, runId);
    try {
      const result = await store.readJournal(sessionId, runId, { afterSequence: after });
      for (const record of result.records) {
        yield { kind: 'record', record };
        after = record.sequence;
        if (endingTypes.has(record.type)) {
          yield {
            kind: 'end',
            reason: 'terminal',
            terminalState: stateByType[record.type] ?? null,
          };
          return;
        }
      }
      if (result.records.length > 0) {
        lastProgressAt = Date.now();
        continue;
      }
      if (result.gap !== null) {
        yield { kind: 'end', reason: 'journal-gap', terminalState: null };
        return;
      }
      const summary = await store.runSummary(sessionId, runId);
      if (summary.terminalState !== null && summary.lastSequence <= after) {
        yield { kind: 'end', reason: 'terminal', terminalState: summary.terminalState };
        return;
      }
      if (!options.isLocal() && Date.now() - lastProgressAt >= options.recoveryProbeMs) {
        lastProgressAt = Date.now();
        if (!(await probeForRecovery(store, sessionId))) {
          yield { kind: 'end', reason: 'session-deleted', terminalState: null };
          return;
        }
        continue;
      }
      await waitForChange(watch.changed, options.pollIntervalMs, signal);
    } finally {
      watch.dispose();
    }
  }
}

/** Loading is what triggers recovery of a dead run (F1); false when the session is gone. */
async function probeForRecovery(store: SessionStore, sessionId: string): Promise<boolean> {
  try {
    await store.load(sessionId, { refresh: true });
    return true;
  } catch (error) {
    if (NotFoundError.isInstance(error)) return false;
    throw error;
  }
}

function waitForChange(changed: Promise<void>, timeoutMs: number, signal: AbortSignal) {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(finish, timeoutMs);
    function finish() {
      clearTimeout(timer);
      signal.removeEventListener('abort', finish);
      resolve();
    }
    signal.addEventListener('abort', finish, { once: true });
    void changed.then(finish);
  });
}
