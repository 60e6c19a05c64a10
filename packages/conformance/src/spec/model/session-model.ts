import type { Session } from '@keepsake/core';
import type { ExpectedMessage } from './expected-messages.js';

/** A run left live when its task ended: the next restart must recover it (F1). */
export interface AbandonedRun {
  readonly question: string;
  readonly attachments: readonly string[];
  /** Tokens whose append resolved before the run was abandoned. */
  readonly tokens: readonly string[];
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
    this.working.push({ kind: 'marker', type: 'interrupted' });
    this.acknowledged = [...this.working];
  }
}
