import type { MarkerType, Session } from '@keepsake/core';
import type { ExpectedMessage } from './expected-messages.js';
import type { ExpectedToolCall } from './expected-turns.js';

/** A run left live when its task ended: the next restart must recover it (F1). */
export interface AbandonedRun {
  readonly runId: string;
  /** The session id its journal is kept under. */
  readonly sessionId: string;
  readonly question: string;
  readonly attachments: readonly string[];
  /** Tokens whose append resolved before the run was abandoned. */
  readonly tokens: readonly string[];
}

/**
 * A run that ended in this slot's transcript (E5, E6, F1): checked after every round and
 * restart for exactly one marker (none when it completed) and, where the contract ties them,
 * a marker that agrees with the journal's terminal state.
 */
export interface TrackedRun {
  /** The session id its journal is kept under (a rename moves only live runs' journals). */
  readonly sessionId: string;
  readonly runId: string;
  /** The kind of its one marker, or null: it completed (no marker). */
  readonly marker: MarkerType | null;
  /**
   * Whether the marker must agree with what the journal says now. Not so once a later turn
   * was answered before the run's output ended (D4: the turn is never rewritten), nor for a
   * damaged or foreign journal (E2: its outcome is not believed).
   */
  readonly agreesWithJournal: boolean;
}

/** A rotated parent (D2): its id, and the transcript it keeps for good. */
export interface RotatedParent {
  readonly id: string;
  readonly rotatedTo: string;
  readonly messages: readonly ExpectedMessage[];
}

/**
 * The reference model of one session slot. Deliberately small: what the application holds,
 * what the live session says, and what was acknowledged as stored. Only the slot's own
 * task changes it, so it needs no locking even though tasks run at once.
 */
export class SessionModel {
  /** The ids this slot has in turn: a rename moves it to the next one. */
  readonly names: readonly string[];
  private nameIndex = 0;
  /** Whether the current id exists: a create resolved and no delete since. */
  exists = false;
  /**
   * The session object the application holds, or null after `drop`, a restart or a
   * delete. C4: while held, `load` must return this very object, and every edit made to
   * it reaches storage with the next save, flushAll or close, evicted or not.
   */
  held: Session | null = null;
  /** What the live session holds (the held object's transcript, edits included). */
  working: ExpectedMessage[] = [];
  /** What storage holds, per the writes that resolved (a fresh store must see this). */
  acknowledged: ExpectedMessage[] = [];
  /** Deep copies of earlier revisions, for saves of stale objects (B4). */
  staleCopies: Session[] = [];
  /** The object held when the session was deleted: saving it must be refused (B8). */
  deletedObject: Session | null = null;
  readonly parents: RotatedParent[] = [];
  abandoned: AbandonedRun | null = null;
  /** F4: the tool calls the transcript holds, each owned by its run. */
  toolCalls: ExpectedToolCall[] = [];
  /** Runs that ended in this transcript, for the marker and journal checks. */
  runs: TrackedRun[] = [];

  constructor(
    readonly slot: number,
    names: readonly string[],
  ) {
    this.names = names;
  }

  get id(): string {
    return this.names[this.nameIndex]!;
  }

  /** The id the next rename moves to, or null when the slot has used every name. */
  get nextId(): string | null {
    return this.names[this.nameIndex + 1] ?? null;
  }

  /** D2: the session continues under the next id; the old one stays as its parent. */
  rotate(): void {
    const rotatedTo = this.nextId;
    if (rotatedTo === null) throw new Error('no name left to rotate to');
    this.parents.push({ id: this.id, rotatedTo, messages: [...this.working] });
    this.nameIndex++;
    this.acknowledged = [...this.working];
    this.staleCopies = [];
  }

  /** A run ended in this transcript. */
  track(run: TrackedRun): void {
    this.runs = [...this.runs.filter((tracked) => tracked.runId !== run.runId), run];
  }

  /**
   * The transcript lost messages on purpose (undo) or went away (delete): which markers are
   * left is no longer the runs' doing, so they are not checked any more.
   */
  forgetRuns(): void {
    this.runs = [];
  }

  /** A write of the whole live session resolved (save, beginRun, complete, flush…). */
  acknowledgeWorking(): void {
    this.acknowledged = [...this.working];
  }

  /** Keeps a deep copy of the live session as it is now, for a later stale save. */
  rememberRevision(session: Session): void {
    this.staleCopies.push(structuredClone(session));
    if (this.staleCopies.length > 3) this.staleCopies.shift();
  }

  /** After a graceful close: everything the live sessions held was flushed (C1, C2). */
  closed(): void {
    if (this.exists) this.acknowledged = [...this.working];
    this.held = null;
    this.staleCopies = [];
  }

  /** After the process died: unsaved edits are gone, acknowledged writes are not (C3). */
  killed(): void {
    this.working = [...this.acknowledged];
    this.held = null;
    this.staleCopies = [];
  }

  /** F1: a restart past the grace period folds an abandoned run into the transcript. */
  recoverAbandonedRun(): void {
    const run = this.abandoned;
    if (run === null) return;
    this.abandoned = null;
    const answer = run.tokens.join('');
    this.working.push({
      kind: 'question',
      content: run.question,
      attachments: run.attachments,
      recovered: true,
    });
    if (run.tokens.length > 0) {
      this.working.push({ kind: 'answer', content: answer, partial: true, recovered: true });
    }
    this.working.push({ kind: 'marker', type: 'interrupted', runId: run.runId });
    this.acknowledged = [...this.working];
    this.track({
      sessionId: run.sessionId,
      runId: run.runId,
      marker: 'interrupted',
      agreesWithJournal: true,
    });
  }
}
