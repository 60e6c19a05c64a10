/**
 * Folder recovery/: repairing what a crash left (F1–F4). This file repairs a dead run's pending
 * turn from its journal (F1) and retries a journal that arrives late (F2); load-recovery.ts runs
 * it on load, once per session and never under a deadlock (F3); markers.ts and turn-markers.ts
 * are the markers that end a turn that did not complete (F1, F2, E6); answered-run.ts seals the
 * journal of a run whose answer was stored before its `done` (E5, F1).
 */

import type { StorageAdapter } from '../adapter/adapter.js';
import { readWholeJournal } from '../journal/journal-read.js';
import { isFinalState, nextTerminalState, terminalStateOf } from '../journal/terminal-state.js';
import { foldJournal } from '../journal/transcript.js';
import { addPendingUserMessage } from '../runs/pending-user-message.js';
import type { JournalReadResult, RunTerminalState } from '../runs/run-types.js';
import type { JournalRecord, Message, PendingTurn, Session } from '../validation/schemas.js';
import { createMarker } from './markers.js';
import {
  endsForTheUser,
  isSuperseded,
  keepsWatching,
  markerForJournal,
  withWatch,
} from './turn-markers.js';

export interface RecoverySettings {
  graceMs: number;
  maxAttempts: number;
  giveUpMs: number;
}

export interface RecoveryContext extends RecoverySettings {
  adapter: StorageAdapter;
  now: number;
  /**
   * F3: appends the interrupted-by-crash record to a dead run's journal, after `tail` (what
   * the repair's read just found), without a flush of its own. Its durability is not needed:
   * losing it (a power loss before the page cache reaches the disk) leaves the journal as
   * if the append had failed, which recovery already tolerates. The turn's marker keeps
   * watching an unsealed journal (F2), and a later repair of the same turn, if the repair
   * itself was lost too, appends it again. Resolves with the sequence the record took.
   */
  appendCrashRecord(sessionId: string, runId: string, tail: CrashRecordTail): Promise<number>;
  /** Reports a problem recovery worked around (a `warning` event). */
  warn(sessionId: string, message: string): void;
}

/** What a repair's read of a journal found: its writer starts from there. */
export interface CrashRecordTail {
  readonly lastSequence: number;
  readonly state: RunTerminalState | null;
  readonly exists: boolean;
}

export type PendingRepairOutcome = 'alive' | 'completed' | 'recovered' | 'pending-retry' | 'final';

/**
 * F1: whether the adapter instance that began the run is certainly gone (its process no
 * longer exists): its turn is repaired at once, without waiting out the grace. A failure to
 * ask is no answer: the grace decides, as without liveness.
 */
async function ownerIsGone(context: RecoveryContext, pending: PendingTurn): Promise<boolean> {
  const liveness = context.adapter.liveness;
  if (pending.ownerId === undefined || liveness === undefined) return false;
  if (pending.ownerId === liveness.ownerId) return false;
  try {
    return (await liveness.ownerState(pending.ownerId)) === 'gone';
  } catch {
    return false;
  }
}

/**
 * Whether a load should look at this session: a pending turn not owned here, or a marker
 * still watching its journal. A watching marker that a later turn superseded needs a look
 * too (to stop watching, without reading anything); one that is settled needs none (F2).
 */
export function needsRecovery(session: Session, liveRunIds: ReadonlySet<string>): boolean {
  if (session.pending !== null && !liveRunIds.has(session.pending.streamId)) return true;
  return session.messages.some((message) => message.marker?.retry !== undefined);
}

/**
 * F1: repairs a pending turn whose run shows no sign of life (start, heartbeat, last
 * journal record) within the grace period. Mutates `session`; the caller saves it with
 * touchUpdatedAt false. A journal that cannot be read right now (an I/O error) does not
 * fail the load: the turn gets a pending-retry marker and a later load reads it (F2).
 */
export async function repairPendingTurn(
  session: Session,
  context: RecoveryContext,
): Promise<PendingRepairOutcome> {
  const pending = session.pending;
  if (pending === null) return 'alive';
  const runId = pending.streamId;
  const read = await readForRecovery(context, session, runId);
  // An interrupted-by-crash record is written by whoever repairs the run (maybe another
  // instance, just now), never by the run itself: it is no sign of the run's life.
  const lastRunRecord = read?.records.findLast((record) => record.type !== 'interrupted');
  const lastSign = Math.max(pending.startedAt, pending.heartbeatAt ?? 0, lastRunRecord?.at ?? 0);
  if (context.now - lastSign < context.graceMs && !(await ownerIsGone(context, pending))) {
    return 'alive';
  }
  const journal = await sealBeforeFolding(session, runId, read, context);
  const records = journal?.records ?? [];
  // E2: a journal with damaged or foreign records is not trusted to say how the run ended.
  const terminal = journal?.damaged === true ? null : terminalStateOf(records);

  addPendingUserMessage(session, pending, { recovered: true });
  const fold = foldJournal(session, records, session.messages.length, {
    runId,
    now: context.now,
    recovered: true,
    partial: terminal !== 'completed',
  });
  const watch = { streamId: runId, attempts: 0, firstSeenAt: context.now };
  let outcome: PendingRepairOutcome;
  if (terminal === 'completed') {
    outcome = 'completed';
  } else if (fold.hasOutput || endsForTheUser(terminal) || journal?.damaged === true) {
    const stateRecords = journal?.damaged === true ? [] : records;
    const marker = markerForJournal(stateRecords, fold.hasOutput, runId, context.now);
    // F2: output may still arrive after the repair (a worker that was only slow): keep
    // watching the journal until the run has ended for good (a damaged one is not watched).
    const watching = !isFinalState(terminal) && journal?.damaged !== true;
    session.messages.push(withWatch(marker, watching ? watch : null));
    outcome = fold.hasOutput ? 'recovered' : 'final';
  } else {
    const sealed = read !== null && isSealed(read.records);
    const retry = { ...watch, attempts: sealed ? 1 : 0 };
    const marker = createMarker('interrupted', 'pending-retry', runId, context.now);
    session.messages.push(withWatch(marker, retry.attempts >= context.maxAttempts ? null : retry));
    outcome = 'pending-retry';
  }
  session.pending = null;
  return outcome;
}

/**
 * E2, E6, F1: the run looked dead, but its writer may only have been slow, and may append
 * while this repair folds: an append acknowledged then, before the crash record, would be
 * in the journal but in no answer once a later turn is answered (D4), although the run was
 * never told it had lost the turn. So the journal is sealed first, with the crash record,
 * and read again: the fold then holds every record the run appended before it, and what
 * the run appends after it is late output, which the run learns at that append (D4). The
 * crash record is written after whatever the writer appended since the first read (the
 * journal writer goes on after records it did not know of).
 * Returns the second read without the crash records appended after the first one (ours,
 * or a rival repair's), so the turn is decided as before, from what the run wrote; the
 * first read when the journal cannot be sealed or read again (tolerated: the marker
 * keeps watching, F2).
 */
async function sealBeforeFolding(
  session: Session,
  runId: string,
  read: RecoveryRead | null,
  context: RecoveryContext,
): Promise<RecoveryRead | null> {
  // A run that never wrote gets its journal now, holding only the crash record: a run that
  // was only slow learns at its first append that it was taken over (D4), and readers see
  // a run that ended with no output. (A journal that merely is not visible yet takes the
  // record after its own, like any writer that raced this one.)
  if (read === null || terminalStateOf(read.records) !== null) return read;
  const sealedAt = await context.appendCrashRecord(session.id, runId, read.tail).catch(() => null);
  if (sealedAt === null) return read;
  // Right after what the read found: nothing was appended in between, the read is whole.
  if (sealedAt === read.tail.lastSequence + 1) return read;
  const again = await readForRecovery(context, session, runId, false);
  if (again === null) return read;
  const readUpTo = read.tail.lastSequence;
  return {
    ...again,
    records: again.records.filter(
      (record) => record.sequence <= readUpTo || record.type !== 'interrupted',
    ),
  };
}

/**
 * F2: lazily re-reads the journal of every marker still watching one, and folds in what
 * arrived since, above the marker (F4: tags make a second fold add only what is new). A
 * journal still arriving (missing, or not sealed) costs no attempt, nor does an unreadable
 * one; a sealed journal with nothing new costs one. The watch ends once the run has ended
 * for good, a later turn was answered (that marker is settled without a read), the
 * attempts or the give-up age are used up, or the marker has no stream id. Returns whether
 * the session changed, and whether a marker was removed (its run completed after all).
 */
export async function retryPendingMarkers(
  session: Session,
  context: RecoveryContext,
  justRepaired: string | null = null,
): Promise<{ changed: boolean; removedMarker: boolean }> {
  let changed = false;
  let removedMarker = false;
  const markerIds = session.messages
    .filter((message) => message.marker?.retry !== undefined)
    .map((message) => message.id);
  for (const markerId of markerIds) {
    const index = session.messages.findIndex((message) => message.id === markerId);
    const message = session.messages[index];
    const retry = message?.marker?.retry;
    if (message === undefined || retry === undefined) continue;
    // The marker a repair made in this same load already reflects the journal.
    if (retry.streamId !== null && retry.streamId === justRepaired) continue;
    const superseded = isSuperseded(session, index);
    if (!keepsWatching(null, retry, superseded, context)) {
      session.messages[index] = withWatch(message, null);
      changed = true;
      continue;
    }
    const journal = await readForRecovery(context, session, retry.streamId!);
    if (journal === null) continue;
    const refreshed = refoldMarker(
      session,
      index,
      journal.records,
      retry,
      context,
      journal.damaged,
    );
    if (refreshed === 'removed') removedMarker = true;
    if (refreshed !== 'unchanged') changed = true;
  }
  return { changed, removedMarker };
}

/**
 * Folds a run's journal in above its marker at `index` and brings the marker up to date:
 * removed when the run completed, otherwise the marker the journal calls for, still
 * watching or not (see retryPendingMarkers).
 */
export function refoldMarker(
  session: Session,
  index: number,
  records: readonly JournalRecord[],
  retry: NonNullable<NonNullable<Message['marker']>['retry']>,
  context: Pick<RecoveryContext, 'now' | 'maxAttempts' | 'giveUpMs' | 'graceMs'>,
  damaged = false,
): 'removed' | 'changed' | 'unchanged' {
  const message = session.messages[index]!;
  const runId = retry.streamId!;
  // E2: a journal with damaged or foreign records is not trusted to say how the run ended:
  // its output is folded, under the generic interrupted marker, and it is watched no more.
  const terminal = damaged ? null : terminalStateOf(records);
  const fold = foldJournal(session, records, index, {
    runId,
    now: context.now,
    recovered: true,
    partial: terminal !== 'completed',
  });
  const markerIndex = index + fold.inserted.length;
  if (terminal === 'completed') {
    session.messages.splice(markerIndex, 1);
    return 'removed';
  }
  // Attempts count only while the marker still says output may come (pending-retry): a
  // recovered marker watches until the give-up age without a write per load.
  const costsAttempt =
    message.marker!.wording === 'pending-retry' && fold.changes === 0 && isSealed(records);
  const next = { ...retry, attempts: retry.attempts + (costsAttempt ? 1 : 0) };
  let marker = message;
  if (fold.hasOutput || endsForTheUser(terminal) || damaged) {
    const wanted = markerForJournal(
      damaged ? [] : records,
      fold.hasOutput,
      runId,
      message.createdAt,
    );
    if (wanted.content !== message.content || wanted.marker!.type !== message.marker!.type) {
      // The marker keeps its id: it is the same turn's marker, now saying more (F4).
      marker = { ...wanted, id: message.id };
    }
  } else if (
    message.marker!.wording === 'pending-retry' &&
    context.now - retry.firstSeenAt >= context.graceMs
  ) {
    // F2: a run that died before its first journal record leaves no journal at all, which
    // looks like one not visible yet. After a grace period the marker stops saying output
    // may still arrive and takes the final neutral wording; its run stays watched, so a
    // journal that was only late is still folded in (and the wording says so) if it shows.
    marker = {
      ...createMarker('interrupted', 'neutral', runId, message.createdAt),
      id: message.id,
    };
  }
  const watching = !damaged && keepsWatching(terminal, next, false, context);
  const updated = withWatch(marker, watching ? next : null);
  if (fold.changes === 0 && JSON.stringify(updated) === JSON.stringify(message)) {
    return 'unchanged';
  }
  session.messages[markerIndex] = updated;
  return 'changed';
}

/**
 * Reads a journal for recovery; null when it cannot be read right now (F2 retries it).
 * E2: records the adapter returned but that cannot be trusted are left out and reported as
 * a warning, never thrown: damaged ones (readJournal skips them) and foreign ones, whose
 * event id the transcript already attributes to another run (a record copied or planted
 * from elsewhere). `damaged` then says the journal's own account of the run is not trusted.
 */
/** A journal as recovery reads it (see readForRecovery). */
type RecoveryRead = JournalReadResult & { damaged: boolean; tail: CrashRecordTail };

async function readForRecovery(
  context: RecoveryContext,
  session: Session,
  runId: string,
  /** False for a second read of the same journal: its damage was reported by the first. */
  report = true,
): Promise<RecoveryRead | null> {
  const sessionId = session.id;
  try {
    const journal = await readWholeJournal(context.adapter, sessionId, runId);
    const foreign = eventIdsOfOtherRuns(session, runId);
    const records = journal.records.filter((record) => !foreign.has(record.eventId));
    const foreignCount = journal.records.length - records.length;
    const problems = [
      ...journal.invalidRecords.map((entry) => `record ${entry.sequence}: ${entry.reason}`),
      ...journal.gaps.map((gap) => `records ${gap.expected} to ${gap.found - 1} are missing`),
      ...(foreignCount > 0 ? [`${foreignCount} record(s) carry event ids of another run`] : []),
    ];
    if (problems.length > 0 && report) {
      context.warn(
        sessionId,
        `the journal of run "${runId}" is damaged (${problems.join('; ')}); what is intact is kept, under the generic interrupted marker`,
      );
    }
    // The tail a journal writer would learn by reading it (every intact record, foreign
    // ones included), so the crash record's writer need not read the journal again.
    let state: RunTerminalState | null = null;
    for (const record of journal.records) state = nextTerminalState(state, record.type);
    const tail = { lastSequence: journal.lastSequence, state, exists: journal.exists };
    return { ...journal, records, damaged: problems.length > 0, tail };
  } catch (error) {
    context.warn(
      sessionId,
      `the journal of run "${runId}" could not be read (${error instanceof Error ? error.message : String(error)}); a later load tries again`,
    );
    return null;
  }
}

/** Event ids the transcript attributes to runs other than `runId` (F4 journal tags). */
function eventIdsOfOtherRuns(session: Session, runId: string): Set<string> {
  const ids = new Set<string>();
  for (const tagged of [...session.messages, ...session.toolCalls]) {
    const tag = tagged.journal;
    if (tag !== undefined && tag.runId !== runId) ids.add(tag.eventId);
  }
  return ids;
}

/**
 * F2: whether the run itself ended its journal (a terminal record or `stream_end` of its
 * own). A repair's crash record does not count: it is how a repair of a run that never wrote
 * creates the journal (D4), and a journal holding only that is one whose output may still be
 * late to show, which costs no attempt.
 */
function isSealed(records: readonly JournalRecord[]): boolean {
  const own = records.filter((record) => record.type !== 'interrupted');
  return terminalStateOf(own) !== null || own.some((record) => record.type === 'stream_end');
}
