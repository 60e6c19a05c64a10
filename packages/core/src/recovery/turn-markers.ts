import { isFinalState, nextTerminalState, terminalStateOf } from '../journal/terminal-state.js';
import type { RunTerminalState } from '../runs/run-types.js';
import type { JournalRecord, Marker, Message, Session } from '../validation/schemas.js';
import { createMarker } from './markers.js';

type RetryState = NonNullable<Marker['retry']>;

/**
 * F1, F2, E6: the marker that ends a turn whose run did not complete, as its journal says
 * now: cancelled, failed (with the error's own text, as `run.fail` writes it), stopped at
 * the tool limit, or interrupted (recovered wording when output was found). The same
 * marker whether it is made by the first repair or by a later retry.
 */
export function markerForJournal(
  records: readonly JournalRecord[],
  hasOutput: boolean,
  runId: string,
  now: number,
): Message {
  const state = terminalStateOf(records);
  switch (state) {
    case 'interrupted-by-user':
      return createMarker('cancelled', 'cancelled', runId, now);
    case 'errored':
      return createMarker('errored', 'errored', runId, now, { detail: errorText(records) });
    case 'tool-limit-reached':
      return createMarker('tool-limit', 'tool-limit', runId, now);
    default:
      return createMarker('interrupted', hasOutput ? 'recovered' : 'neutral', runId, now);
  }
}

/** Whether the journal says how the turn ended for the user (no retry can change the kind). */
export function endsForTheUser(state: RunTerminalState | null): boolean {
  return state === 'interrupted-by-user' || state === 'errored' || state === 'tool-limit-reached';
}

/**
 * F2, D4: whether a later turn was answered after the marker at `index` (a user message
 * follows it). Output of the marker's run is then never folded in above that later turn,
 * and its journal is no longer watched: it stays readable through `readJournal`.
 */
export function isSuperseded(session: Session, index: number): boolean {
  for (let position = index + 1; position < session.messages.length; position++) {
    if (session.messages[position]?.role === 'user') return true;
  }
  return false;
}

/**
 * F2: whether a marker keeps watching its run's journal for output that arrives late: while
 * the run has not ended for good (completed, cancelled, tool limit), no later turn was
 * answered, and neither the give-up age nor the attempts are used up.
 */
export function keepsWatching(
  state: RunTerminalState | null,
  retry: RetryState,
  superseded: boolean,
  limits: { now: number; maxAttempts: number; giveUpMs: number },
): boolean {
  return (
    !isFinalState(state) &&
    !superseded &&
    retry.streamId !== null &&
    retry.attempts < limits.maxAttempts &&
    limits.now - retry.firstSeenAt < limits.giveUpMs
  );
}

/** The marker with its watch state set, or removed (a pending-retry marker turns neutral). */
export function withWatch(message: Message, retry: RetryState | null): Message {
  const { retry: _previous, ...marker } = message.marker!;
  if (retry !== null) return { ...message, marker: { ...marker, retry } };
  if (marker.wording !== 'pending-retry') return { ...message, marker };
  return {
    ...createMarker(marker.type, 'neutral', marker.runId, message.createdAt),
    id: message.id,
  };
}

/** The text of the error that made the journal's state errored (the last one that counts). */
function errorText(records: readonly JournalRecord[]): string {
  let state: RunTerminalState | null = null;
  let text = '';
  for (const record of records) {
    state = nextTerminalState(state, record.type);
    if (record.type === 'error' && state === 'errored') {
      const message = record.data.message;
      text = typeof message === 'string' ? message : '';
    }
  }
  return text;
}
