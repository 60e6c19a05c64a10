/**
 * The data of the steps that drive issue 15's cases (runs, journal and recovery: what the
 * transcript says after a race, a crash or a bad record), as plain data so fast-check can
 * generate, shrink and print them. program.ts puts them among the other steps.
 */

/**
 * One event a run streams: text, or a tool call (with its result right after, or not).
 * A run's tool calls are numbered from 0 (`call_0`, `call_1`…), so every run reuses the
 * ids of the runs before it, as providers do (F4: tool calls are scoped by run).
 */
export type RunEvent = { type: 'token'; text: string } | { type: 'tool'; result: boolean };

/** A later turn, answered after an earlier turn was ended (D4, F2: the earlier one is then settled). */
export interface LaterTurn {
  readonly question: string;
  readonly events: readonly RunEvent[];
}

/**
 * E6, D4: a run streams on this store while the other instance cancels it (`cancelRun`).
 * `first` are appended one by one; `queued` are sent at once, none awaited, and the cancel
 * goes out after `cancelAfter` of them. `afterwards`: what the run does once the cancel resolved.
 */
export interface ForeignCancelPlan {
  readonly question: string;
  readonly first: readonly string[];
  readonly queued: readonly string[];
  readonly cancelAfter: number;
  /** `cancelRun(id, runId)` rather than `cancelRun(id)`. */
  readonly byRunId: boolean;
  readonly afterwards: 'append' | 'complete' | 'cancel' | 'fail';
}

/**
 * D4, F1, F2: a run of this store goes quiet (its checkpoints do not fire) past the grace
 * period; the other instance repairs its turn. The fenced run then appends late output
 * (`lateBefore`), the other instance may answer a later turn, the fenced run appends more
 * (`lateAfter`) and ends with `complete()`, `complete({ assistantMessages })` or `cancel()`.
 */
export interface FencePlan {
  readonly question: string;
  readonly attachments: readonly string[];
  readonly early: readonly RunEvent[];
  readonly lateBefore: readonly RunEvent[];
  readonly laterTurn: LaterTurn | null;
  readonly lateAfter: readonly RunEvent[];
  readonly ending: 'complete' | 'completeWith' | 'cancel';
  /** The assistant message of `completeWith`. */
  readonly text: string;
  /**
   * Whether this store loads the session (with `refresh`) while its run is fenced out, or
   * goes on with what it cached when the run began, as a hung worker's process does.
   */
  readonly primaryLooks: boolean;
}

/**
 * E6, F1, F3: a quiet run past the grace period is cancelled (or failed) by its own handle
 * while the other instance repairs its turn; each side waits `…Pauses` scheduling points.
 */
export interface RepairRacePlan {
  readonly question: string;
  readonly tokens: readonly string[];
  readonly end: 'cancel' | 'fail';
  readonly endPauses: number;
  readonly repairPauses: number;
}

/**
 * E2: ways a stored record can be damaged: not a record at all, a record that says another
 * sequence, a record of another run, a record reusing an event id used earlier in the journal.
 */
export type Damage = 'garbage' | 'wrongSequence' | 'otherRun' | 'reusedEventId';

/**
 * E2, E3: a damaged record planted (through a raw adapter) in the middle of a live run's
 * journal, with `planted` valid records after it; the run appends `after` and ends.
 */
export interface DamagedLivePlan {
  readonly question: string;
  readonly before: readonly string[];
  readonly damage: Damage;
  readonly planted: readonly string[];
  readonly after: readonly string[];
  readonly end: 'complete' | 'cancel' | 'fail';
}

/** What a dead run's journal holds besides what the run appended, planted before the repair. */
export type DeadJournal =
  | { readonly kind: 'intact' }
  /** F1: a terminal record (the run failed, was cancelled, completed) just before it died. */
  | { readonly kind: 'ends'; readonly event: 'error' | 'cancel' | 'done' }
  /** E2: a damaged record, then valid tokens. */
  | { readonly kind: 'damaged'; readonly damage: Damage; readonly planted: readonly string[] }
  /** F1: a record whose event id the transcript gives to an earlier run of the session. */
  | { readonly kind: 'foreign'; readonly event: 'done' | 'token' };

/**
 * F1, F2, F4: a run whose worker process died (after `events`; none: before its first
 * record). Its journal is planted as `journal` says, one instance repairs the turn past the
 * grace period; then perhaps a second grace period passes, late output is planted
 * (`late`, maybe ending in `done`), a later turn is answered, and more is planted after it.
 */
export interface DeadRunPlan {
  readonly question: string;
  readonly attachments: readonly string[];
  readonly events: readonly RunEvent[];
  readonly journal: DeadJournal;
  readonly repairBy: 'primary' | 'other';
  readonly secondGrace: boolean;
  readonly late: readonly RunEvent[];
  readonly lateDone: boolean;
  readonly laterTurn: LaterTurn | null;
  readonly lateAfter: readonly RunEvent[];
}

function describeEvents(events: readonly RunEvent[]): string {
  if (events.length === 0) return '∅';
  return events
    .map((event) => (event.type === 'token' ? event.text : event.result ? 'tool+result' : 'tool'))
    .join(' ');
}

export function describeForeignCancel(plan: ForeignCancelPlan): string {
  return `foreignCancel(${JSON.stringify(plan.question)}: ${plan.first.join(' ') || '∅'} | queued ${plan.queued.join(' ')}, other.cancelRun${plan.byRunId ? '(id, runId)' : '(id)'} after ${plan.cancelAfter} → then ${plan.afterwards})`;
}

export function describeFence(plan: FencePlan): string {
  const later =
    plan.laterTurn === null
      ? ''
      : `, other answers ${JSON.stringify(plan.laterTurn.question)}: ${describeEvents(plan.laterTurn.events)}, late ${describeEvents(plan.lateAfter)}`;
  return `fence(${JSON.stringify(plan.question)}${plan.attachments.length > 0 ? ` +${JSON.stringify(plan.attachments)}` : ''}: ${describeEvents(plan.early)}, past grace other repairs${plan.primaryLooks ? ' (this store looks)' : ''}, late ${describeEvents(plan.lateBefore)}${later} → ${plan.ending === 'completeWith' ? `complete({ assistantMessages: ${JSON.stringify(plan.text)} })` : `${plan.ending}()`})`;
}

export function describeRepairRace(plan: RepairRacePlan): string {
  return `repairRace(${JSON.stringify(plan.question)}: ${plan.tokens.join(' ') || '∅'}, past grace: ${'~'.repeat(plan.endPauses)}${plan.end}() ‖ ${'~'.repeat(plan.repairPauses)}other repairs)`;
}

export function describeDamagedLive(plan: DamagedLivePlan): string {
  return `damagedLive(${JSON.stringify(plan.question)}: ${plan.before.join(' ') || '∅'} [${plan.damage}] planted ${plan.planted.join(' ') || '∅'}, then ${plan.after.join(' ') || '∅'} → ${plan.end})`;
}

export function describeDeadRun(plan: DeadRunPlan): string {
  const journal =
    plan.journal.kind === 'intact'
      ? ''
      : plan.journal.kind === 'damaged'
        ? ` [${plan.journal.damage}] ${plan.journal.planted.join(' ')}`
        : ` [${plan.journal.kind} ${plan.journal.event}]`;
  const late =
    plan.late.length > 0 || plan.lateDone
      ? `, late ${describeEvents(plan.late)}${plan.lateDone ? ' done' : ''}`
      : '';
  const later =
    plan.laterTurn === null
      ? ''
      : `, answers ${JSON.stringify(plan.laterTurn.question)}: ${describeEvents(plan.laterTurn.events)}, late ${describeEvents(plan.lateAfter)}`;
  return `deadRun(${JSON.stringify(plan.question)}${plan.attachments.length > 0 ? ` +${JSON.stringify(plan.attachments)}` : ''}: ${describeEvents(plan.events)}${journal}, worker dies, ${plan.repairBy} repairs${plan.secondGrace ? ', second grace' : ''}${late}${later})`;
}
