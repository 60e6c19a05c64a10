import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { mapConcurrently } from '../harness/measure.js';
import { type PlainSessionDocument, plainSession, text } from './messages.js';

/** Token text of one journaled event in the recovery workload. */
export const TOKEN_TEXT_LENGTH = 100;

/** A plain session file of the baseline, with the pending turn a crashed run left behind. */
export interface PlainPendingSession extends PlainSessionDocument {
  pending: { runId: string; userMessage: { role: 'user'; content: string } } | null;
}

export interface RecoveryWorkload {
  readonly sessions: number;
  readonly messagesPerSession: number;
  readonly eventsPerRun: number;
}

/**
 * The baseline's state after the same crash: `sessions/<id>.json` with a pending turn, and
 * `journals/<run>.jsonl` with the run's token events. Written as the crashed process would
 * have left it; made durable by the caller's page-cache flush before any trial.
 */
export async function prepareBaselineState(
  directory: string,
  workload: RecoveryWorkload,
): Promise<void> {
  await mkdir(join(directory, 'sessions'), { recursive: true });
  await mkdir(join(directory, 'journals'), { recursive: true });
  const indexes = Array.from({ length: workload.sessions }, (_, index) => index);
  await mapConcurrently(indexes, 16, async (index) => {
    const runId = `run-${index}`;
    const session: PlainPendingSession = {
      ...plainSession(`session-${index}`, workload.messagesPerSession),
      pending: { runId, userMessage: { role: 'user', content: 'Summarize our conversation.' } },
    };
    const lines = Array.from({ length: workload.eventsPerRun }, (_, event) =>
      JSON.stringify({
        sessionId: session.id,
        runId,
        sequence: event + 1,
        type: 'token',
        data: { text: text(TOKEN_TEXT_LENGTH, event) },
        at: 1_700_000_000_000 + event,
      }),
    );
    await writeFile(join(directory, 'sessions', `${session.id}.json`), JSON.stringify(session));
    await writeFile(join(directory, 'journals', `${runId}.jsonl`), `${lines.join('\n')}\n`);
  });
}
