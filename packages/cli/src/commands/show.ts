import { assertValidId, decodeStoredSession, type Session } from '@keepsake/core';
import { NothingThereError, ProblemsFoundError } from '../cli-errors.js';
import type { CommandContext } from '../command-context.js';
import { type JournalHealth, journalHealth, journalLine } from '../journal-health.js';
import { contentText, formatTime, messageLine, oneLine } from '../text-format.js';

export interface ShowOptions {
  json?: boolean;
}

/**
 * `keepsake show <store> <id>`: the session as stored, its transcript, the pending turn and
 * a summary of every run journal. It only reads: the document is decoded as it is (no crash
 * repair on the way, F1, and no quarantine of a document that does not parse, A2), so what
 * is shown is what a restart would find.
 */
export async function showCommand(
  context: CommandContext,
  url: string,
  id: string,
  options: ShowOptions,
): Promise<void> {
  assertValidId(id);
  const spec = context.backend(url);
  await context.withStore(spec, 'read', async (store) => {
    // Opens the store's adapter (and tells a missing session from a missing document).
    const runIds = await store.listRuns(id);
    const stored = await store.adapter.getDocument('sessions', id);
    if (stored === null) {
      throw new NothingThereError(
        `No session "${id}" in ${spec.display}${runIds.length > 0 ? ` (${runIds.length} journal(s) are stored under that id)` : ''}`,
      );
    }
    const decoded = decodeStoredSession(id, stored, Date.now());
    if (!decoded.ok) {
      await context.note(`session "${id}" does not parse: ${decoded.reason}`);
      throw new ProblemsFoundError(1, `show ${id}`);
    }
    const journals: JournalHealth[] = [];
    for (const runId of runIds) journals.push(await journalHealth(store, id, runId));
    const session = decoded.session;
    if (options.json === true) {
      await context.printJson({
        session,
        storedRevision: stored.revision,
        deltas: stored.deltas.length,
        problems: decoded.problems,
        journals,
      });
      return;
    }
    for (const line of describeSession(session, stored.deltas.length, journals)) {
      await context.print(line);
    }
    for (const problem of decoded.problems) {
      await context.note(`warning: ${problem.field}: ${problem.message} when read (A5)`);
    }
  });
}

function describeSession(session: Session, deltas: number, journals: JournalHealth[]): string[] {
  const lines = [
    `session   ${session.id}`,
    `title     ${oneLine(session.title)}`,
    `revision  ${session.revision} (${deltas} delta${deltas === 1 ? '' : 's'} since the last full write)`,
    `created   ${formatTime(session.createdAt)}`,
    `updated   ${formatTime(session.updatedAt)}`,
  ];
  if (session.parentId !== null) lines.push(`parent    ${session.parentId}`);
  if (session.rotatedTo !== null) lines.push(`rotated   to ${session.rotatedTo}`);
  lines.push('', `transcript (${session.messages.length} messages)`);
  session.messages.forEach((message, index) => {
    lines.push(messageLine(message, index));
  });
  if (session.toolCalls.length > 0) {
    lines.push('', `tool calls (${session.toolCalls.length})`);
    for (const call of session.toolCalls) {
      lines.push(
        `  ${call.id}  ${call.name}  ${call.done ? (call.isError ? 'failed' : 'done') : 'running'}`,
      );
    }
  }
  lines.push('');
  const pending = session.pending;
  if (pending === null) {
    lines.push('pending turn: none');
  } else {
    lines.push(
      'pending turn',
      `  run       ${pending.streamId}`,
      `  started   ${formatTime(pending.startedAt)}`,
      `  heartbeat ${formatTime(pending.heartbeatAt)}`,
      `  user      ${oneLine(contentText(pending.userMessage.content))}`,
    );
    const journal = journals.find((health) => health.runId === pending.streamId);
    lines.push(`  journal   ${journal === undefined ? 'none yet' : journalLine(journal)}`);
  }
  lines.push('', `journals (${journals.length})`);
  for (const health of journals) lines.push(`  ${health.runId}  ${journalLine(health)}`);
  return lines;
}
