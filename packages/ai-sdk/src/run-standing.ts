import {
  type Marker,
  type Message,
  NotFoundError,
  type RunTerminalState,
  type Session,
  type SessionStore,
} from '@keepsake/core';

/**
 * Where a session stands toward one of its runs, as its transcript says. A run whose
 * process died before its first journal record has no journal at all; its session is then
 * the only place that knows it (the pending turn, later the marker recovery adds).
 */
export type RunStanding =
  /** The session's pending turn: live, or dead and not recovered yet (F1). */
  | { kind: 'pending' }
  /** Ended with a marker; not `final` while the marker says output may still arrive (F2). */
  | { kind: 'marker'; marker: Marker; message: Message; final: boolean }
  /** Messages or tool calls of the run, no marker: it completed. */
  | { kind: 'ended' }
  /** Nothing names the run (not one of the session's, or undone since). */
  | { kind: 'unknown' }
  /** The session is gone. */
  | { kind: 'deleted' };

/**
 * Loads the session afresh and reads the run's standing. The load is also what repairs a
 * dead run's turn once the recovery grace has passed (F1) and settles its marker (F2).
 */
export async function loadRunStanding(
  store: SessionStore,
  sessionId: string,
  runId: string,
): Promise<RunStanding> {
  let session: Session;
  try {
    session = await store.load(sessionId, { refresh: true });
  } catch (error) {
    if (NotFoundError.isInstance(error)) return { kind: 'deleted' };
    throw error;
  }
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

/** The terminal state a marker stands for, as the journal would have said it. */
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
