import {
  type JournalEventType,
  type JournalReadResult,
  type JournalRecord,
  type Marker,
  NotFoundError,
  type RunTerminalState,
  type SessionStore,
} from '@keepsake/core';
import type { JournalWaker } from './journal-waker.js';
import { loadRunStanding, type RunStanding, terminalStateOfMarker } from './run-standing.js';

export type TailItem =
  | { kind: 'record'; record: JournalRecord }
  /**
   * E2, E3: records the read skipped (damaged, or not this journal's) and jumps in the
   * sequence, up to `lastSequence`. The tail goes on after them, as core's reads do, so one
   * bad record never hides the rest of an answer.
   */
  | {
      kind: 'skipped';
      invalidRecords: Array<{ sequence: number; reason: string }>;
      gaps: Array<{ expected: number; found: number }>;
      lastSequence: number;
    }
  /** The run ended without a journal (it died before its first record): its final marker. */
  | { kind: 'marker'; marker: Marker; text: string; at: number }
  | { kind: 'end'; reason: TailEndReason; terminalState: RunTerminalState | null };

/**
 * - `terminal`: the journal's terminal record was streamed;
 * - `no-journal`: the run left no journal, and its session's marker for it is final;
 * - `session-deleted`: the session is gone.
 */
export type TailEndReason = 'terminal' | 'no-journal' | 'session-deleted';

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
   * interrupted record, which ends this tail. Also the longest wait between two looks at
   * the session of a run that has no journal.
   */
  recoveryProbeMs: number;
  /** The store's `recovery.graceMs`: how long after a pending-retry marker a load makes it final (F2). */
  graceMs: number;
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
 *
 * A damaged or foreign record, or a jump in the sequence, is reported (`skipped`) and read
 * past (E2, E3): the run goes on after it, and so does the tail.
 *
 * A run that died before its first record gets its journal from the repair, holding only
 * the crash record (F1, D4), which ends the tail like any other. Where that record could not
 * be written (or an older version repaired the turn) there is no journal at all, and its
 * session says how it stands instead: the tail
 * looks at it on a bounded interval (each look is a load, which is what moves recovery
 * on, F1 then F2) and ends with the marker once that is final, so no client is left
 * waiting for a journal that will never come.
 */
export async function* tailJournal(options: TailOptions): AsyncGenerator<TailItem> {
  const { store, waker, sessionId, runId, signal } = options;
  let after = options.afterSequence;
  let lastProgressAt = Date.now();
  // A run without a journal is looked up in its session at once (a reconnect after the
  // marker became final ends straight away), then on the schedule `nextLookAt` returns.
  let sessionLookAt = 0;
  while (!signal.aborted) {
    const watch = waker.watch(sessionId, runId);
    try {
      const result = await store.readJournal(sessionId, runId, { afterSequence: after });
      // Told where it happened: before the first record that comes after the damage.
      let skippedAt = firstSkippedSequence(result);
      for (const record of result.records) {
        if (skippedAt !== null && record.sequence > skippedAt) {
          skippedAt = null;
          yield skippedItem(result);
        }
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
      if (skippedAt !== null) yield skippedItem(result);
      // A skipped record still moved the journal on: the next read starts after it (torn
      // tails are not counted in `lastSequence`, so a record still being written is not).
      const moved = result.records.length > 0 || result.lastSequence > after;
      if (result.lastSequence > after) after = result.lastSequence;
      if (moved) {
        lastProgressAt = Date.now();
        continue;
      }
      const summary = await store.runSummary(sessionId, runId);
      if (summary.terminalState !== null && summary.lastSequence <= after) {
        yield { kind: 'end', reason: 'terminal', terminalState: summary.terminalState };
        return;
      }
      const local = options.isLocal();
      if (!summary.exists && !local && Date.now() >= sessionLookAt) {
        const standing = await standingOrDeleted(store, sessionId, runId);
        if (standing === null) {
          yield { kind: 'end', reason: 'session-deleted', terminalState: null };
          return;
        }
        const ending = endingWithoutJournal(standing);
        if (ending !== null) {
          yield* ending;
          return;
        }
        sessionLookAt = nextLookAt(standing, options);
        lastProgressAt = Date.now();
      } else if (!local && Date.now() - lastProgressAt >= options.recoveryProbeMs) {
        lastProgressAt = Date.now();
        const standing = await standingOrDeleted(store, sessionId, runId);
        if (standing === null) {
          yield { kind: 'end', reason: 'session-deleted', terminalState: null };
          return;
        }
        // E5: the session shows the turn answered, but its journal never got its ending (the
        // run's process died between complete()'s save and the seal): seal it; the next read
        // meets the `done` record and ends the stream.
        if (standing.kind === 'ended') await store.closeAnsweredRun(sessionId, runId);
        continue;
      }
      await waitForChange(watch.changed, options.pollIntervalMs, signal);
    } finally {
      watch.dispose();
    }
  }
}

/** The sequence of the first record a read skipped or found missing, or null. */
function firstSkippedSequence(result: JournalReadResult): number | null {
  const sequences = [
    ...result.invalidRecords.map((entry) => entry.sequence),
    ...result.gaps.map((gap) => gap.expected),
  ];
  return sequences.length === 0 ? null : Math.min(...sequences);
}

function skippedItem(result: JournalReadResult): TailItem {
  return {
    kind: 'skipped',
    invalidRecords: result.invalidRecords,
    gaps: result.gaps,
    lastSequence: result.lastSequence,
  };
}

/** Loading is what triggers recovery of a dead run (F1, F2); null when the session is gone. */
async function standingOrDeleted(
  store: SessionStore,
  sessionId: string,
  runId: string,
): Promise<RunStanding | null> {
  try {
    return await loadRunStanding(store, sessionId, runId);
  } catch (error) {
    if (NotFoundError.isInstance(error)) return null;
    throw error;
  }
}

/** The last items of a tail whose run has no journal, or null while it may still get one. */
function endingWithoutJournal(standing: RunStanding): TailItem[] | null {
  switch (standing.kind) {
    case 'pending':
      return null;
    case 'marker':
      if (!standing.final) return null;
      return [
        {
          kind: 'marker',
          marker: standing.marker,
          text: typeof standing.message.content === 'string' ? standing.message.content : '',
          at: standing.message.createdAt,
        },
        {
          kind: 'end',
          reason: 'no-journal',
          terminalState: terminalStateOfMarker(standing.marker),
        },
      ];
    // Ended without a journal and without a marker (or undone since): nothing will come.
    case 'ended':
    case 'unknown':
      return [{ kind: 'end', reason: 'no-journal', terminalState: null }];
  }
}

/**
 * When to look at the session again. A pending-retry marker becomes final on the first
 * load once `graceMs` has passed since it was written (F2): look right then. Otherwise (a
 * pending turn, live elsewhere or not yet recovered) after the recovery probe interval.
 * Never sooner than the poll interval, never later than the probe interval.
 */
function nextLookAt(standing: RunStanding, options: TailOptions): number {
  const now = Date.now();
  const earliest = now + options.pollIntervalMs;
  const latest = now + options.recoveryProbeMs;
  if (standing.kind === 'marker' && standing.marker.retry !== undefined) {
    const finalAt = standing.marker.retry.firstSeenAt + options.graceMs;
    return Math.min(latest, Math.max(earliest, finalAt));
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
