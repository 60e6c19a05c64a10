/**
 * Folder journal/: a run's journal (E2, E3). This file appends to it in order (E2), reads
 * (journal-read.ts) check every record and survive a torn tail or a gap (E3), journal-record.ts
 * is a record's stored text, terminal-state.ts the terminal states a journal can reach, and
 * transcript.ts folds a journal into messages and tool calls, tagged so a second fold adds
 * nothing (E5, E6, F1, F4).
 */

import type { AppendLogResult, LogDurability, StorageAdapter } from '../adapter/adapter.js';
import { adapterCall } from '../adapter/adapter-call.js';
import { InvalidInputError, LimitExceededError } from '../errors/input-errors.js';
import { KeepsakeError } from '../errors/keepsake-error.js';
import {
  JournalConflictError,
  JournalSealedError,
  RunNotActiveError,
  RunTakenOverError,
} from '../errors/run-errors.js';
import { BackendError } from '../errors/storage-errors.js';
import type { JournalDurabilityPolicy } from '../options/store-options.js';
import type { JournalEventInput, JournalReadResult, RunTerminalState } from '../runs/run-types.js';
import type { Clock } from '../time/clock.js';
import { assertValidId, randomId } from '../validation/ids.js';
import {
  type JournalEventType,
  type JournalRecord,
  journalEventTypeSchema,
} from '../validation/schemas.js';
import { READ_PAGE, readJournal, readWholeJournal } from './journal-read.js';
import { assertReadableData, recordText, storedRecord } from './journal-record.js';
import { isFinalState, isTerminalEvent, nextTerminalState } from './terminal-state.js';

function noop(): void {}

/** The event types, for a check on every streamed event that allocates nothing. */
const EVENT_TYPES: ReadonlySet<string> = new Set(journalEventTypeSchema.options);

export interface JournalWriterOptions {
  adapter: StorageAdapter;
  clock: Clock;
  sessionId: string;
  runId: string;
  policy: JournalDurabilityPolicy;
  maxEventBytes: number;
  /** After each append the adapter accepted: the record as stored (its session id is current). */
  onAppend?: (record: JournalRecord, durationMs: number, durable: boolean) => void;
  /**
   * What a read of the journal just found (its last sequence stored, the terminal state of
   * its records, whether it exists), so the first append need not read it again (F3: the
   * crash record of a recovery that has just read the whole journal). A tail that is stale
   * by then costs nothing but the usual conflict: the adapter's sequence check refuses the
   * append and the writer goes on after what was stored meanwhile.
   */
  knownTail?: { lastSequence: number; state: RunTerminalState | null; exists: boolean };
  /** Every append with this durability, whatever `policy` says (F3: see `appendCrashRecord`). */
  durability?: LogDurability;
  /**
   * D4: this is the run's own writer. Once its journal holds a crash record (written only by
   * a repair, never by the run), every append of output is refused with `RunTakenOverError`:
   * the repair ended the turn with what came before that record, so anything after it would
   * be acknowledged and then reach no reader. The two endings a caller asks for still land,
   * `cancel` (run.cancel) and `error` (run.fail): they carry no output, and while the turn is
   * the last one answered they decide its one marker (E6), in whichever order they and the
   * repair's crash record were stored.
   */
  fencedByTakeover?: boolean;
}

/**
 * Appends to one run's journal. Appends are serialized in this process; the adapter's
 * sequence check fences writers in other processes (a canceller, a recovering instance):
 * on a conflict the writer re-reads the tail and tries again with the next sequence.
 */
export class JournalWriter {
  private lastSequence: number | null = null;
  private state: RunTerminalState | null = null;
  /** The last append or move started; later ones run after it settles (it may reject). */
  private last: Promise<unknown> = Promise.resolve();
  /**
   * Appends and moves queued or in flight: at 0 an append starts at once, unchained. Each
   * counts itself out as it ends (`finally` in write and moveTo): no promise per event.
   */
  private busy = 0;
  /** Set once this writer saw its journal exist; a journal that then vanishes was deleted (B8). */
  private seenJournal = false;
  private deleted = false;
  /** Set once a crash record by another writer was read from this journal (D4). */
  private takenOver = false;

  constructor(private readonly options: JournalWriterOptions) {
    const tail = options.knownTail;
    if (tail !== undefined) {
      this.lastSequence = tail.lastSequence;
      this.state = tail.state;
      this.seenJournal = tail.exists;
    }
  }

  get sessionId(): string {
    return this.options.sessionId;
  }

  /** Whether this writer found its session deleted (B8): every append is refused. */
  get isDeleted(): boolean {
    return this.deleted;
  }

  /** Whether this writer read another instance's crash record in its journal (D4). */
  get isTakenOver(): boolean {
    return this.takenOver;
  }

  /** Refuses every further append: the session and its journals were deleted (B8). */
  markDeleted(): void {
    this.deleted = true;
  }

  /**
   * D2: moves the journal to a rotated session id between two appends. Records are
   * copied with their sequences (their session id rewritten), then appends continue
   * under the new id. The old copy stays with the parent document.
   */
  moveTo(newSessionId: string): Promise<void> {
    const move = async () => {
      try {
        await this.move(newSessionId);
      } finally {
        this.busy--;
      }
    };
    return this.enqueue(move);
  }

  private async move(newSessionId: string): Promise<void> {
    const { adapter, runId } = this.options;
    const journal = await readWholeJournal(adapter, this.options.sessionId, runId);
    const records = journal.records.map((record) => ({
      sequence: record.sequence,
      text: JSON.stringify({ ...record, sessionId: newSessionId }),
    }));
    if (records.length > 0) {
      const copied = await adapter.appendLog(newSessionId, runId, records, {
        durability: 'group',
      });
      if (!copied.ok) throw new JournalConflictError(runId, 1, copied.lastSequence);
    }
    this.options.sessionId = newSessionId;
    this.lastSequence = null;
  }

  get terminalState(): RunTerminalState | null {
    return this.state;
  }

  /** Resolves once every append queued so far has settled. */
  async idle(): Promise<void> {
    await this.last.then(noop, noop);
  }

  append(input: JournalEventInput): Promise<JournalRecord> {
    let prepared: ReturnType<JournalWriter['prepare']>;
    try {
      prepared = this.prepare(input);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.enqueue(() => this.write(prepared));
  }

  /**
   * Starts `operation` after every earlier append and move has settled, whatever their
   * outcome; at once when none is pending (a stream awaits each append, so usually). The
   * operation must count itself out of `busy` when it ends.
   */
  private enqueue<T>(operation: () => Promise<T>): Promise<T> {
    // Counted before it starts: an operation may end (and count itself out) synchronously.
    this.busy++;
    const result = this.busy === 1 ? operation() : this.last.then(operation, operation);
    this.last = result;
    return result;
  }

  private prepare(input: JournalEventInput) {
    if (typeof input.type !== 'string' || !EVENT_TYPES.has(input.type)) {
      throw new InvalidInputError(`Unknown journal event type ${JSON.stringify(input.type)}`);
    }
    const type = input.type as JournalEventType;
    const eventId =
      input.eventId === undefined ? randomId() : assertValidId(input.eventId, 'event');
    const data = input.data ?? {};
    if (typeof data !== 'object' || data === null || Array.isArray(data)) {
      throw new InvalidInputError('Journal event data must be a plain object');
    }
    let dataText: string;
    try {
      dataText = JSON.stringify(data);
    } catch (cause) {
      throw new InvalidInputError('Journal event data is not serializable as JSON', { cause });
    }
    // UTF-8 takes at most 3 bytes per UTF-16 unit: most events need no byte count at all.
    const bytes =
      dataText.length * 3 <= this.options.maxEventBytes ? 0 : Buffer.byteLength(dataText);
    if (bytes > this.options.maxEventBytes) {
      throw new LimitExceededError(
        'maxJournalEventBytes',
        this.options.maxEventBytes,
        bytes,
        'Journal event',
      );
    }
    // E2: refused before it is queued, not once the appends ahead of it have settled.
    assertReadableData(dataText);
    // The serialized data is spliced into the record's text (one stringify per event).
    return { type, eventId, dataText };
  }

  private async write(prepared: {
    type: JournalEventType;
    eventId: string;
    dataText: string;
  }): Promise<JournalRecord> {
    const { adapter, sessionId, runId } = this.options;
    // E6: a terminal event from outside the run (a cancel, a failure, a crash record) must
    // win against the run's own stream. After a conflict it takes the very next sequence at
    // once and looks at what it skipped only afterwards (one round trip per attempt, where
    // the stream needs two), so it gets in between two appends of even a busy stream.
    const jumpsTheQueue = isTerminalEvent(prepared.type);
    /** After a conflict: the first sequence this writer has not read yet. */
    let unreadFrom: number | null = null;
    let stalled = 0;
    try {
      for (;;) {
        if (this.deleted) throw new RunNotActiveError(sessionId, runId, 'its session was deleted');
        if (this.lastSequence === null) await this.refresh();
        if (unreadFrom !== null && !jumpsTheQueue) {
          await this.catchUp(unreadFrom);
          unreadFrom = null;
        }
        if (this.deleted) throw new RunNotActiveError(sessionId, runId, 'its session was deleted');
        if (isFinalState(this.state) && prepared.type !== 'stream_end') {
          throw new JournalSealedError(runId, this.state!);
        }
        if (this.refusesAfterTakeover(prepared.type)) throw new RunTakenOverError(sessionId, runId);
        const record = storedRecord(
          sessionId,
          runId,
          this.lastSequence! + 1,
          prepared.eventId,
          prepared.type,
          prepared.dataText,
          this.options.clock.now(),
        );
        const durability = this.durabilityFor(prepared.type);
        const started = performance.now();
        const text = recordText(record, prepared.dataText);
        let result: AppendLogResult;
        try {
          result = await adapter.appendLog(
            sessionId,
            runId,
            [{ sequence: record.sequence, text }],
            {
              durability,
            },
          );
        } catch (cause) {
          throw KeepsakeError.isInstance(cause)
            ? cause
            : new BackendError(adapter.name, 'append to a journal', { cause });
        }
        if (result.ok) {
          this.seenJournal = true;
          if (unreadFrom !== null) {
            // What another writer appended before this record decides whether the journal
            // was already sealed: then this record stands (it changes no outcome: a final
            // state is never superseded, E2) but the event is reported as refused.
            await this.catchUp(unreadFrom, record.sequence);
            if (isFinalState(this.state)) {
              this.lastSequence = record.sequence;
              throw new JournalSealedError(runId, this.state!);
            }
            // D4: a repair's crash record came first. This record (a `done`: an ending with
            // no output of its own) stands after it, but the event is refused, never
            // acknowledged; complete() never gets here for a repaired turn (it checks the
            // pending turn first), so no answer is marked completed by it.
            if (this.refusesAfterTakeover(prepared.type)) {
              this.lastSequence = record.sequence;
              throw new RunTakenOverError(sessionId, runId);
            }
          }
          this.lastSequence = record.sequence;
          this.state = nextTerminalState(this.state, record.type);
          // B8: the first record created the journal. Had another instance deleted the session
          // since this run began, that journal would outlive it: take it back and refuse.
          if (record.sequence === 1) await this.refuseIfSessionDeleted();
          this.options.onAppend?.(record, performance.now() - started, durability !== 'none');
          return record;
        }
        // Another writer took this sequence. While the journal keeps growing its writer is
        // alive and this one goes on after it, however long that takes; a conflict that
        // shows no progress, again and again, is not a race but a broken journal.
        if (result.lastSequence <= this.lastSequence!) {
          // Not moved on, or moved back (deleted, B8): learn the journal afresh.
          stalled++;
          if (stalled >= 8) {
            throw new JournalConflictError(runId, record.sequence, result.lastSequence);
          }
          this.lastSequence = null;
          unreadFrom = null;
          continue;
        }
        stalled = 0;
        unreadFrom ??= this.lastSequence! + 1;
        this.lastSequence = result.lastSequence;
      }
    } finally {
      this.busy--;
    }
  }

  /**
   * A check that fails leaves the append standing (it is stored; failing it would invite a
   * duplicate). A session moved to quarantine (A2) is not deleted: the run is refused but
   * its journal stays beside the quarantined document, so restoring it brings the run's
   * output back. A journal that cannot be removed fails the append with that BackendError;
   * the run refuses every later append either way.
   */
  private async refuseIfSessionDeleted(): Promise<void> {
    const { adapter, sessionId, runId } = this.options;
    const exists = await adapterCall(adapter.name, 'check a session', () =>
      adapter.hasDocument('sessions', sessionId),
    ).catch(() => true);
    if (exists) return;
    this.deleted = true;
    const quarantined = await adapterCall(adapter.name, 'list quarantine', () =>
      adapter.listQuarantined(),
    ).then(
      (documents) =>
        documents.some(
          (document) => document.collection === 'sessions' && document.id === sessionId,
        ),
      // Unknown: keep the journal rather than risk deleting output.
      () => true,
    );
    if (quarantined) {
      throw new RunNotActiveError(sessionId, runId, 'its session was moved to quarantine');
    }
    await adapterCall(adapter.name, 'delete a journal', () =>
      adapter.deleteLog(sessionId, runId, { durable: true }),
    );
    throw new RunNotActiveError(sessionId, runId, 'its session was deleted');
  }

  private refusesAfterTakeover(type: JournalEventType): boolean {
    return (
      this.takenOver &&
      this.options.fencedByTakeover === true &&
      type !== 'cancel' &&
      type !== 'error' &&
      type !== 'stream_end'
    );
  }

  /** Notes a crash record written by another writer (only repairs write them, F1). */
  private learn(records: readonly JournalRecord[]): void {
    for (const record of records) if (record.type === 'interrupted') this.takenOver = true;
  }

  private durabilityFor(type: JournalEventType): LogDurability {
    if (this.options.durability !== undefined) return this.options.durability;
    switch (this.options.policy) {
      case 'each':
        return 'each';
      case 'group':
        return 'group';
      case 'terminal':
        return isTerminalEvent(type) ? 'group' : 'none';
    }
  }

  /**
   * Reads the records from `from` (up to, not including, `before`) that another writer
   * appended, to learn the terminal state they leave; `lastSequence` is already past them.
   * Damaged records are skipped (E2, E3): they hold no state, but their sequences are taken.
   */
  private async catchUp(from: number, before = Number.POSITIVE_INFINITY): Promise<void> {
    const { adapter, sessionId, runId } = this.options;
    let after = from - 1;
    let state = this.state;
    for (;;) {
      const page = await readJournal(adapter, sessionId, runId, {
        afterSequence: after,
        ...(Number.isFinite(before) ? { upToSequence: before - 1 } : {}),
      });
      for (const record of page.records) state = nextTerminalState(state, record.type);
      this.learn(page.records);
      const moved = page.lastSequence > after;
      after = page.lastSequence;
      if (!moved || !isFullPage(page) || after >= before - 1) break;
    }
    this.state = state;
    if (this.lastSequence === null || after > this.lastSequence) this.lastSequence = after;
  }

  /**
   * Re-reads the stored journal to learn its last sequence and terminal state. A damaged
   * record in the middle is skipped, not taken for the end (E2, E3): the next append goes
   * after the last sequence stored, so the run can still complete and seal.
   */
  async refresh(): Promise<void> {
    let after = 0;
    let state: RunTerminalState | null = null;
    for (;;) {
      const page = await readJournal(
        this.options.adapter,
        this.options.sessionId,
        this.options.runId,
        {
          afterSequence: after,
        },
      );
      if (after === 0) {
        // B8: the journal this writer appended to is gone: its session was deleted.
        if (!page.exists && this.seenJournal) this.deleted = true;
        if (page.exists) this.seenJournal = true;
      }
      for (const record of page.records) state = nextTerminalState(state, record.type);
      this.learn(page.records);
      const moved = page.lastSequence > after;
      after = page.lastSequence;
      if (!moved || !isFullPage(page)) break;
    }
    this.lastSequence = after;
    this.state = state;
  }
}

/** Whether a read returned as many stored records as a page holds (there may be more). */
function isFullPage(page: JournalReadResult): boolean {
  return page.records.length + page.invalidRecords.length >= READ_PAGE;
}
