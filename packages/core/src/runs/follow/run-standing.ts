import type { Marker, Message, Session } from '../../validation/schemas.js';

/**
 * How a session stands toward one of its runs, as its transcript says. A run whose process
 * died before its first journal record may have no journal at all; its session is then the
 * only place that knows it (its pending turn, later the marker its repair adds).
 */
export type RunStanding =
  /** The session's pending turn: live, or dead and not repaired yet (F1). */
  | { kind: 'pending'; lastSignAt: number; ownerId: string | null }
  /** Ended with a marker; not `final` while the marker says output may still arrive (F2). */
  | { kind: 'marker'; message: Message & { marker: Marker }; final: boolean }
  /** Messages or tool calls of the run and no marker: it was answered. */
  | { kind: 'ended' }
  /** Nothing names the run (not one of the session's, or undone since). */
  | { kind: 'unknown' }
  /** The session is gone (B8). */
  | { kind: 'deleted' };

/**
 * How `session` stands toward run `runId` (public as `runStandingOf`): for a server that
 * answers for a run id it handed out, also one whose run died before its first record.
 * Load the session with `{ refresh: true }` first: that load is what repairs a dead run (F1).
 */
export function runStandingIn(session: Session, runId: string): RunStanding {
  const pending = session.pending;
  if (pending?.streamId === runId) {
    return {
      kind: 'pending',
      lastSignAt: Math.max(pending.startedAt, pending.heartbeatAt ?? 0),
      ownerId: pending.ownerId ?? null,
    };
  }
  const message = session.messages.findLast((candidate) => candidate.marker?.runId === runId);
  if (message?.marker !== undefined) {
    return {
      kind: 'marker',
      message: message as Message & { marker: Marker },
      final: message.marker.wording !== 'pending-retry',
    };
  }
  const tagged =
    session.messages.some((candidate) => candidate.runId === runId) ||
    session.toolCalls.some((call) => call.runId === runId);
  return tagged ? { kind: 'ended' } : { kind: 'unknown' };
}
