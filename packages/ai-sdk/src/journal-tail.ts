import type {
  JournalEventType,
  JournalRecord,
  Marker,
  Message,
  RunTerminalState,
  SessionStore,
} from '@keepsake/core';
import type { JournalWaker } from './journal-waker.js';
import { loadRunStanding, type RunStanding, terminalStateOfMarker } from './run-standing.js';

export type TailItem =
  | { kind: 'record'; record: JournalRecord }
  | {
      kind: 'end';
      reason: TailEndReason;
      state: RunTerminalState | null;
      /** The session's marker for the run, when the ending was read from the session. */
      marker: { marker: Marker; message: Message } | null;
    };

/**
 * - `terminal`: the journal's terminal record was read (or the summary says it is sealed);
 * - `session`: the run has no terminal record and never will, as its session says (it left no
 *   journal and its marker is final; or it ended without sealing the journal);
 * - `deleted`: the session is gone.
 */
export type TailEndReason = 'terminal' | 'session' | 'deleted';

export interface TailOptions {
  store: SessionStore;
  waker: JournalWaker;
  sessionId: string;
  runId: string;
  /** Records with a greater sequence are read. */
  afterSequence: number;
  signal: AbortSignal;
  /** How often the journal of a run another process streams is read. */
  pollIntervalMs: number;
  /**
   * The store's `recovery.graceMs`. With no new record for this long, from a run this process
   * does not stream, the tail loads the session: if the run's process died, that load
   * recovers the turn (F1) and appends the interrupted record that ends the tail.
   */
  graceMs: number;
  /** Whether this process streams the run (its death would be this process's own). */
  isLocal(): boolean;
}

const terminalTypes = new Map<JournalEventType, RunTerminalState>([
  ['done', 'completed'],
  ['error', 'errored'],
  ['cancel', 'interrupted-by-user'],
  ['tool_limit', 'tool-limit-reached'],
  ['interrupted', 'interrupted-by-crash'],
]);

/**
 * Follows a run's journal from a sequence until the run ends. The journal is the one source
 * of truth: the tail reads the same records whether this process streams the run (woken at
 * once by the store's events), another process does (polled), or nobody does any more (the
 * tail's own loads recover the turn, which appends the record that ends it). A damaged record
 * is skipped, as core skips it (E2, E3): the run goes on after it, and so does the tail.
 */
export async function* tailJournal(options: TailOptions): AsyncGenerator<TailItem> {
  const { store, waker, sessionId, runId, signal } = options;
  let after = options.afterSequence;
  let lastProgressAt = Date.now();
  let nextSessionLookAt = 0;
  // The run stopped being the session's pending turn and the journal had nothing more.
  let notPendingReads = 0;
  while (!signal.aborted) {
    const watch = waker.watch(sessionId, runId);
    try {
      const page = await store.readJournal(sessionId, runId, { afterSequence: after });
      for (const record of page.records) {
        yield { kind: 'record', record };
        after = record.sequence;
        const state = terminalTypes.get(record.type);
        if (state !== undefined) {
          const marker = state === 'completed' ? null : await sessionMarkerOf(options, Date.now());
          yield { kind: 'end', reason: 'terminal', state, marker };
          return;
        }
      }
      if (page.lastSequence > after) after = page.lastSequence;
      if (page.records.length > 0) {
        lastProgressAt = Date.now();
        continue;
      }
      const summary = await store.runSummary(sessionId, runId);
      if (summary.terminalState !== null && summary.lastSequence <= after) {
        yield { kind: 'end', reason: 'terminal', state: summary.terminalState, marker: null };
        return;
      }
      const now = Date.now();
      let standing: RunStanding | null = null;
      if (options.isLocal()) {
        // This process streams the run: its records and state changes wake the tail.
      } else if (!summary.exists) {
        if (now >= nextSessionLookAt) {
          standing = await loadRunStanding(store, sessionId, runId);
          nextSessionLookAt = nextLookAt(standing, options);
        }
      } else if (notPendingReads > 0 || now - lastProgressAt >= options.graceMs) {
        lastProgressAt = now;
        standing = await loadRunStanding(store, sessionId, runId);
      }
      if (standing !== null) {
        // E5: the session shows the turn answered, but its journal never got its ending (the
        // producer died between complete()'s save and the seal): seal it, then read on.
        if (
          standing.kind === 'ended' &&
          summary.exists &&
          (await store.closeAnsweredRun(sessionId, runId)) !== null
        ) {
          continue;
        }
        const ending = endingOf(standing, summary.exists, notPendingReads);
        if (ending !== null) {
          yield ending;
          return;
        }
        if (standing.kind !== 'pending') {
          // Recovery may have just appended the record that ends the run: read once more.
          notPendingReads++;
          continue;
        }
      }
      await waitForChange(watch.changed, options.pollIntervalMs, signal);
    } finally {
      watch.dispose();
    }
  }
}

/**
 * The marker the session holds for a run that ended without completing. Core seals the
 * journal first and writes the marker right after (E6, F1), so it may take a moment to
 * appear; the stream ends with it, the same marker `loadChat` shows afterwards (for a crash
 * whose journal held no output yet, that is F2's pending-retry marker, not a guess). Null
 * when none appears within the wait: the ending is then derived from the journal.
 */
async function sessionMarkerOf(
  options: TailOptions,
  startedAt: number,
): Promise<{ marker: Marker; message: Message } | null> {
  const deadline = startedAt + Math.max(1_000, 4 * options.pollIntervalMs);
  for (;;) {
    const standing = await loadRunStanding(options.store, options.sessionId, options.runId);
    if (standing.kind === 'marker') return { marker: standing.marker, message: standing.message };
    if (standing.kind !== 'pending' || Date.now() >= deadline || options.signal.aborted) {
      return null;
    }
    await new Promise((resolve) => setTimeout(resolve, options.pollIntervalMs));
  }
}

/**
 * The end a session's standing calls for, or null while the run may still write records:
 * it is pending; its journal exists and may get the record a recovery appends (one more
 * read first); or its marker still says output may arrive (F2).
 */
function endingOf(
  standing: RunStanding,
  journalExists: boolean,
  notPendingReads: number,
): TailItem | null {
  switch (standing.kind) {
    case 'pending':
      return null;
    case 'deleted':
      return { kind: 'end', reason: 'deleted', state: null, marker: null };
    case 'marker':
      if (journalExists ? notPendingReads === 0 : !standing.final) return null;
      return {
        kind: 'end',
        reason: 'session',
        state: terminalStateOfMarker(standing.marker),
        marker: { marker: standing.marker, message: standing.message },
      };
    case 'ended':
    case 'unknown':
      if (journalExists && notPendingReads === 0) return null;
      return {
        kind: 'end',
        reason: 'session',
        state: standing.kind === 'ended' ? 'completed' : null,
        marker: null,
      };
  }
}

/**
 * When to look at the session of a run without a journal again: right when a pending-retry
 * marker becomes final (a load once `graceMs` passed since it was written, F2), otherwise a
 * grace later; never sooner than the poll interval.
 */
function nextLookAt(standing: RunStanding, options: TailOptions): number {
  const now = Date.now();
  const latest = now + options.graceMs;
  if (standing.kind === 'marker' && standing.marker.retry !== undefined) {
    const finalAt = standing.marker.retry.firstSeenAt + options.graceMs;
    return Math.min(latest, Math.max(now + options.pollIntervalMs, finalAt));
  }
  return latest;
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
