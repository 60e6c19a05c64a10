import { JournalSealedError } from '../errors/run-errors.js';
import { readWholeJournal } from '../journal/journal-read.js';
import type { JournalWriter } from '../journal/journal-writer.js';
import { isFinalState } from '../journal/terminal-state.js';
import { foldJournal } from '../journal/transcript.js';
import { createMarker } from '../recovery/markers.js';
import { isSuperseded } from '../recovery/turn-markers.js';
import type { CacheEntry } from '../sessions/session-cache.js';
import { settlesWithin } from '../time/deadline.js';
import type { PendingTurn, Session } from '../validation/schemas.js';
import { normalizeMessage } from '../validation/session-validation.js';
import { addPendingUserMessage } from './pending-user-message.js';
import { createJournalWriter, type RunHost } from './run-host.js';
import type { CancelOutcome, CompleteRunInput, JournalEventInput } from './run-types.js';

/** Bounded: a session rewritten this often while one run ends is contended, not unlucky. */
export const MAX_CONFLICT_ATTEMPTS = 5;

/**
 * E5: writes a completed turn into the transcript: the user turn, then the caller's
 * assistant messages or else the run's journal folded, and the pending fields cleared, in
 * one save with fsync. The caller holds the session lock, has checked that `runId` still
 * owns the pending turn (D4), and seals the journal once this returns. On failure the
 * session is restored, so a retry after a revision conflict starts from what was there.
 */
export async function writeCompletedTurn(
  host: RunHost,
  entry: CacheEntry,
  turn: { sessionId: string; runId: string; pending: PendingTurn },
  input: CompleteRunInput,
): Promise<void> {
  const { sessionId, runId, pending } = turn;
  const session = entry.session;
  const now = host.options.clock.now();
  const snapshot = snapshotOf(session);
  try {
    addPendingUserMessage(session, pending);
    if (input.assistantMessages !== undefined) {
      input.assistantMessages.forEach((message, index) => {
        const normalized = normalizeMessage(
          { runId, ...message },
          now,
          `assistantMessages[${index}]`,
        );
        session.messages.push(normalized);
      });
    } else {
      const journal = await readWholeJournal(host.options.adapter, sessionId, runId);
      foldJournal(session, journal.records, session.messages.length, {
        runId,
        now,
        recovered: false,
        partial: false,
      });
    }
    session.pending = null;
    await host.write(entry, { fsync: true });
  } catch (cause) {
    restore(session, snapshot);
    throw cause;
  }
}

/**
 * E6: ends a pending turn as cancelled or failed, under the caller-held session lock.
 * The journal is sealed first (so the worker's later appends are refused), then the
 * user turn, the partial output and one marker are written and the pending fields
 * cleared in one save, with fsync.
 */
export async function interruptPendingTurn(
  host: RunHost,
  entry: CacheEntry,
  runWriter: JournalWriter,
  kind: 'cancel' | 'error',
  error?: { message: string; code?: string },
  appendsSettled?: Promise<boolean>,
): Promise<CancelOutcome> {
  const session = entry.session;
  const pending = session.pending;
  if (pending === null) return { cancelled: false, reason: 'no-pending-turn' };
  const runId = pending.streamId;
  // E6: the run's appends in flight go first, but only for so long: an append that never
  // returns (a hung backend call) must not hold the session lock forever. Past the deadline
  // the cancel record goes through a writer of its own, which takes the next sequence
  // whatever the stuck one does; that one then finds the journal sealed.
  const writer = (await (appendsSettled ?? appendsSettleInTime(host, runWriter)))
    ? runWriter
    : createJournalWriter(host, session.id, runId);
  const interruptedState = kind === 'cancel' ? 'interrupted-by-user' : 'errored';
  // Already in the journal when an earlier attempt appended it and then met a revision
  // conflict writing the session (or another instance cancelled meanwhile): the session
  // still needs the turn ended, and the journal needs no second event.
  if (writer.terminalState !== interruptedState) {
    try {
      await writer.append(terminalEvent(kind, error));
    } catch (cause) {
      if (!JournalSealedError.isInstance(cause)) throw cause;
      if (writer.terminalState !== interruptedState) {
        return { cancelled: false, reason: 'already-finished' };
      }
    }
  }
  const journal = await readWholeJournal(host.options.adapter, session.id, runId);
  const now = host.options.clock.now();
  const snapshot = snapshotOf(session);
  try {
    addPendingUserMessage(session, pending);
    foldJournal(session, journal.records, session.messages.length, {
      runId,
      now,
      recovered: false,
      partial: true,
    });
    const marker =
      kind === 'cancel'
        ? createMarker('cancelled', 'cancelled', runId, now)
        : createMarker('errored', 'errored', runId, now, { detail: error?.message ?? '' });
    if (!session.messages.some((message) => message.id === marker.id))
      session.messages.push(marker);
    session.pending = null;
    await host.write(entry, { fsync: true });
  } catch (cause) {
    restore(session, snapshot);
    throw cause;
  }
  host.emit({
    type: 'run',
    sessionId: session.id,
    runId,
    state: kind === 'cancel' ? 'interrupted-by-user' : 'errored',
  });
  return { cancelled: true, sessionId: session.id, runId };
}

/**
 * E6: whether the run's appends in flight settle within `runs.cancelDeadlineMs`. A cancel
 * starts this clock when it is called, before it waits for the lock or re-reads anything.
 */
export function appendsSettleInTime(host: RunHost, runWriter: JournalWriter): Promise<boolean> {
  const { clock, cancelDeadlineMs } = host.options;
  return settlesWithin(runWriter.idle(), clock, cancelDeadlineMs);
}

function terminalEvent(
  kind: 'cancel' | 'error',
  error?: { message: string; code?: string },
): JournalEventInput {
  return kind === 'cancel'
    ? { type: 'cancel' }
    : { type: 'error', data: { message: error?.message ?? 'failed', code: error?.code ?? null } };
}

interface SessionSnapshot {
  messages: Session['messages'];
  toolCalls: Session['toolCalls'];
  pending: Session['pending'];
}

function snapshotOf(session: Session): SessionSnapshot {
  return {
    messages: [...session.messages],
    toolCalls: [...session.toolCalls],
    pending: session.pending,
  };
}

function restore(session: Session, snapshot: SessionSnapshot): void {
  session.messages.splice(0, session.messages.length, ...snapshot.messages);
  session.toolCalls.splice(0, session.toolCalls.length, ...snapshot.toolCalls);
  session.pending = snapshot.pending;
}

/**
 * E6, F1: a cancel (or failure) of a turn another instance's crash repair already ended
 * with an "interrupted" marker — the cancel waited for the lock, or its session write lost
 * the race. While that turn is still the last one, the user's word decides: the journal
 * gets the cancel (or error) record if it lacks it, and the marker is rewritten to agree
 * (exactly one marker, in place, the recovered output above it kept). D4: once a later
 * turn was answered, nothing is written anywhere. Returns null when there is nothing to
 * take over (a later turn answered, the turn ended some other way, the journal sealed).
 */
export async function endRepairedTurn(
  host: RunHost,
  entry: CacheEntry,
  writer: JournalWriter,
  runId: string,
  kind: 'cancel' | 'error',
  error?: { message: string; code?: string },
  /**
   * This cancel (or failure) already wrote its journal record, in an attempt whose session
   * write then lost to the repair (maybe through a writer of its own, E6's deadline): the
   * ending in the journal is its own, not another instance's.
   */
  ownRecordWritten = false,
): Promise<CancelOutcome | null> {
  const session = entry.session;
  const interruptedState = kind === 'cancel' ? 'interrupted-by-user' : 'errored';
  const index = session.messages.findIndex((message) => message.marker?.runId === runId);
  const found = session.messages[index];
  // D4: a turn a later turn answered is never rewritten, and its journal gets no record.
  if (found?.marker === undefined || isSuperseded(session, index)) return null;
  if (!ownRecordWritten && writer.terminalState !== interruptedState) {
    // D4, E2: what the journal holds now, not what this writer last saw: another instance's
    // cancel may have sealed it (a stale handle's cancel then finds it already finished,
    // and writes no second record).
    await writer.refresh();
    if (isFinalState(writer.terminalState)) return null;
    // Only a crash repair's marker is taken over; a cancel or failure marker is an ending
    // someone asked for, and a later one does not rewrite it.
    if (found.marker.type !== 'interrupted') return null;
    try {
      await writer.append(terminalEvent(kind, error));
    } catch (cause) {
      if (!JournalSealedError.isInstance(cause)) throw cause;
    }
    if (writer.terminalState !== interruptedState) return null;
  }
  const wanted =
    kind === 'cancel'
      ? createMarker('cancelled', 'cancelled', runId, found.createdAt)
      : createMarker('errored', 'errored', runId, found.createdAt, {
          detail: error?.message ?? '',
        });
  if (found.marker.type !== wanted.marker!.type) {
    session.messages[index] = { ...wanted, id: found.id };
    try {
      await host.write(entry, { fsync: true, touchUpdatedAt: false });
    } catch (cause) {
      session.messages[index] = found;
      throw cause;
    }
  }
  return { cancelled: true, sessionId: session.id, runId };
}
