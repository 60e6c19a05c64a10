import type { StorageAdapter } from './adapter.js';
import { readWholeJournal } from './journal-read.js';
import { createMarker, rewordMarker } from './markers.js';
import { pendingUserMessage } from './pending-user-message.js';
import type { RunTerminalState } from './run-types.js';
import type { JournalRecord, MarkerType, MarkerWording, Message, Session } from './schemas.js';
import { terminalStateOf } from './terminal-state.js';
import { foldJournal } from './transcript.js';

export interface RecoverySettings {
  graceMs: number;
  maxAttempts: number;
  giveUpMs: number;
}

export interface RecoveryContext extends RecoverySettings {
  adapter: StorageAdapter;
  now: number;
  /** F3: appends the interrupted-by-crash record to a dead run's journal. */
  appendCrashRecord(sessionId: string, runId: string): Promise<void>;
}

export type PendingRepairOutcome = 'alive' | 'completed' | 'recovered' | 'pending-retry' | 'final';

/** Whether a load should look at this session: a pending turn not owned here, or a retry marker. */
export function needsRecovery(session: Session, liveRunIds: ReadonlySet<string>): boolean {
  if (session.pending !== null && !liveRunIds.has(session.pending.streamId)) return true;
  return session.messages.some((message) => message.marker?.retry !== undefined);
}

/**
 * F1: repairs a pending turn whose run shows no sign of life (start, heartbeat, last
 * journal record) within the grace period. Mutates `session`; the caller saves it with
 * touchUpdatedAt false.
 */
export async function repairPendingTurn(
  session: Session,
  context: RecoveryContext,
): Promise<PendingRepairOutcome> {
  const pending = session.pending;
  if (pending === null) return 'alive';
  const runId = pending.streamId;
  const journal = await readWholeJournal(context.adapter, session.id, runId);
  const lastSign = Math.max(
    pending.startedAt,
    pending.heartbeatAt ?? 0,
    journal.records.at(-1)?.at ?? 0,
  );
  if (context.now - lastSign < context.graceMs) return 'alive';

  if (!session.messages.some((message) => message.id === pending.userMessage.id)) {
    session.messages.push({ ...pendingUserMessage(pending), recovered: true });
  }
  const terminal = terminalStateOf(journal.records);
  const fold = foldJournal(session, journal.records, session.messages.length, {
    runId,
    now: context.now,
    recovered: true,
    partial: terminal !== 'completed',
  });
  let outcome: PendingRepairOutcome;
  if (terminal === 'completed') {
    outcome = 'completed';
  } else if (fold.hasOutput || isUserOrErrorState(terminal)) {
    const [type, wording] = markerFor(terminal, fold.hasOutput);
    session.messages.push(createMarker(type, wording, runId, context.now));
    outcome = fold.hasOutput ? 'recovered' : 'final';
  } else {
    const sealed = isSealed(journal.records);
    const attempts = sealed ? 1 : 0;
    const marker =
      attempts >= context.maxAttempts
        ? createMarker('interrupted', 'neutral', runId, context.now)
        : createMarker('interrupted', 'pending-retry', runId, context.now, {
            retry: { streamId: runId, attempts, firstSeenAt: context.now },
          });
    session.messages.push(marker);
    outcome = 'pending-retry';
  }
  session.pending = null;
  if (journal.exists && terminal === null) {
    await context.appendCrashRecord(session.id, runId).catch(() => undefined);
  }
  return outcome;
}

/**
 * F2: lazily retries every marker that still carries retry state. A journal still
 * arriving (missing, or not sealed) costs no attempt; a sealed journal with nothing
 * usable costs one; max attempts or the give-up age demote the marker to neutral wording.
 * Returns whether the session changed.
 */
export async function retryPendingMarkers(
  session: Session,
  context: RecoveryContext,
): Promise<boolean> {
  let changed = false;
  const markerIds = session.messages
    .filter((message) => message.marker?.retry !== undefined)
    .map((message) => message.id);
  for (const markerId of markerIds) {
    const index = session.messages.findIndex((message) => message.id === markerId);
    const message = session.messages[index];
    const retry = message?.marker?.retry;
    if (message === undefined || retry === undefined) continue;
    if (retry.streamId === null || context.now - retry.firstSeenAt >= context.giveUpMs) {
      session.messages[index] = rewordMarker(message, 'neutral');
      changed = true;
      continue;
    }
    const journal = await readWholeJournal(context.adapter, session.id, retry.streamId);
    const terminal = terminalStateOf(journal.records);
    const fold = foldJournal(session, journal.records, index, {
      runId: retry.streamId,
      now: context.now,
      recovered: true,
      partial: terminal !== 'completed',
    });
    const markerIndex = index + fold.inserted.length;
    if (fold.changes > 0 || fold.hasOutput) {
      changed = true;
      if (terminal === 'completed') {
        session.messages.splice(markerIndex, 1);
      } else {
        const [, wording] = markerFor(terminal, true);
        session.messages[markerIndex] = rewordMarker(message, wording);
      }
      continue;
    }
    if (!isSealed(journal.records)) continue;
    const attempts = retry.attempts + 1;
    changed = true;
    session.messages[markerIndex] =
      attempts >= context.maxAttempts
        ? rewordMarker(message, 'neutral')
        : withRetry(message, { ...retry, attempts });
  }
  return changed;
}

function withRetry(message: Message, retry: NonNullable<Message['marker']>['retry']): Message {
  return { ...message, marker: { ...message.marker!, retry: retry! } };
}

function isSealed(records: readonly JournalRecord[]): boolean {
  return (
    terminalStateOf(records) !== null || records.some((record) => record.type === 'stream_end')
  );
}

function isUserOrErrorState(state: RunTerminalState | null): boolean {
  return state === 'interrupted-by-user' || state === 'errored' || state === 'tool-limit-reached';
}

function markerFor(
  state: RunTerminalState | null,
  hasOutput: boolean,
): [MarkerType, MarkerWording] {
  switch (state) {
    case 'interrupted-by-user':
      return ['cancelled', 'cancelled'];
    case 'errored':
      return ['errored', 'errored'];
    case 'tool-limit-reached':
      return ['tool-limit', 'tool-limit'];
    default:
      return ['interrupted', hasOutput ? 'recovered' : 'neutral'];
  }
}
