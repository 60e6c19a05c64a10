import { JournalSealedError } from '../errors/run-errors.js';
import { createJournalWriter, type RunHost } from '../runs/run-host.js';
import type { RunTerminalState } from '../runs/run-types.js';
import type { Session } from '../validation/schemas.js';

/**
 * E5, F1: the ending of a run whose completed turn is stored but whose journal never got
 * its `done` record. `complete()` saves the turn first and seals the journal after it; a
 * process killed between the two leaves no pending turn (so no repair ever looks at it), no
 * marker, and a journal without an ending, which every follower would wait on forever.
 * The session is the truth here: a turn it shows answered by the run (messages or tool
 * calls tagged with its id, no marker of it, not pending) ends the run as completed, and
 * this seals the journal with the `done` its run never wrote.
 *
 * Returns the journal's terminal state afterwards: `completed` once sealed here (or by the
 * run itself meanwhile), null while the turn is not answered (still pending, live in this
 * process, ended by a marker that watches its journal, or not the session's at all).
 */
export async function closeAnsweredRun(
  host: RunHost,
  sessionId: string,
  runId: string,
  liveHere: boolean,
): Promise<RunTerminalState | null> {
  // A run completing in this process seals its own journal right after its save.
  if (liveHere) return null;
  return host.locks.withLock(sessionId, async () => {
    const entry = await host.entryFor(sessionId);
    // Another instance may have answered (or repaired) the turn since this cache read it.
    await host.refreshIfClean(entry);
    if (!isAnsweredBy(entry.session, runId)) return null;
    const writer = createJournalWriter(host, sessionId, runId);
    await writer.refresh();
    if (writer.terminalState !== null) return writer.terminalState;
    try {
      await writer.append({ type: 'done' });
    } catch (error) {
      // The run's own `done` got there first: sealed completed all the same.
      if (!JournalSealedError.isInstance(error)) throw error;
    }
    return writer.terminalState;
  });
}

/** Whether the session shows the run's turn answered: tagged output, no marker, not pending. */
export function isAnsweredBy(session: Session, runId: string): boolean {
  if (session.pending?.streamId === runId) return false;
  if (session.messages.some((message) => message.marker?.runId === runId)) return false;
  return (
    session.messages.some((message) => message.runId === runId) ||
    session.toolCalls.some((call) => call.runId === runId)
  );
}
