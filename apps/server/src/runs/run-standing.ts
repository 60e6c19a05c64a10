import type { Marker, Message, RunTerminalState, Session, SessionStore } from '@keepsake/core';

/**
 * How a session stands toward one of its runs, as far as its transcript says. A run
 * whose process died before its first journal record has no journal at all: its session
 * is then the only place that knows the run (its pending turn, later its marker), so the
 * server reads the session to answer for the run id it handed out.
 */
export type RunStanding =
  /** The session's pending turn: live, or dead and not recovered yet (F1). */
  | { kind: 'pending' }
  /**
   * Ended with a marker. `final` is false while the marker still says output may arrive
   * (`pending-retry`, F2): a load after the recovery grace makes it final.
   */
  | { kind: 'marker'; marker: Marker; message: Message; final: boolean }
  /** Messages or tool calls carry the run's id, with no marker: it completed. */
  | { kind: 'ended' }
  /** Nothing in the session names the run (never one of its runs, or undone since). */
  | { kind: 'unknown' };

/** Loads the session fresh (which repairs a dead run's turn, F1, F2) and reads its standing. */
export async function loadRunStanding(
  store: SessionStore,
  sessionId: string,
  runId: string,
): Promise<RunStanding> {
  // refresh: another process may have recovered or continued the run since it was cached.
  return runStandingIn(await store.load(sessionId, { refresh: true }), runId);
}

export function runStandingIn(session: Session, runId: string): RunStanding {
  if (session.pending?.streamId === runId) return { kind: 'pending' };
  const markerMessage = session.messages.findLast((message) => message.marker?.runId === runId);
  if (markerMessage?.marker !== undefined) {
    return {
      kind: 'marker',
      marker: markerMessage.marker,
      message: markerMessage,
      final: markerMessage.marker.wording !== 'pending-retry',
    };
  }
  const tagged =
    session.messages.some((message) => message.runId === runId) ||
    session.toolCalls.some((call) => call.runId === runId);
  return tagged ? { kind: 'ended' } : { kind: 'unknown' };
}

/** The terminal state a marker stands for, the way the journal would have said it. */
export function terminalStateOfMarker(marker: Marker): RunTerminalState {
  switch (marker.type) {
    case 'cancelled':
      return 'interrupted-by-user';
    case 'errored':
      return 'errored';
    case 'tool-limit':
      return 'tool-limit-reached';
    case 'interrupted':
      return 'interrupted-by-crash';
  }
}
