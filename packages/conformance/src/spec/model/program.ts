/**
 * The randomized, model-based section (see ../model-based.ts): what one generated run
 * does, as plain data, so fast-check can generate, shrink and print it.
 *
 * Folder map (each file imports only from files above it in this list):
 * - race-plans.ts: the data of the steps that drive issue 15's cases (races between two
 *   instances, fenced runs, dead runs, late, damaged and foreign journal records);
 * - program.ts: the data of one run (this file);
 * - step-arbitraries.ts: how fast-check generates single steps;
 * - race-arbitraries.ts: how it generates the issue-15 steps;
 * - arbitraries.ts: how it weighs them into programs, one profile per test;
 * - expected-messages.ts: the reference model's view of a transcript;
 * - expected-turns.ts: the reference fold of a run's events into a turn (messages, tool
 *   calls, marker);
 * - session-model.ts: the reference model of one session slot;
 * - history.ts: what was called and acknowledged, in order, and the lock-holder check;
 * - world.ts: the real side (store, scheduler, faults, raw reads) and its checks;
 * - step-checks.ts: what every call is held to (must resolve, must be refused and change
 *   nothing, may meet a transient fault and then succeed on retry);
 * - run-checks.ts: what a run leaves (its journal, its one marker agreeing with the
 *   journal, its tool calls) and planting records through a raw adapter;
 * - session-steps.ts, copy-steps.ts, stream-steps.ts, lock-steps.ts, restart-steps.ts:
 *   running each kind of step against the store and the model;
 * - race-support.ts: what issue 15's steps share (a slot at rest, resyncing this store with
 *   what another instance wrote, expected markers, the clock past the grace period);
 * - foreign-cancel-steps.ts, fence-steps.ts, repair-race-steps.ts (two instances: a cancel
 *   racing a stream, a run fenced out by a repair, a cancel racing a repair) and
 *   damaged-journal-steps.ts, dead-run-steps.ts (damaged, late and foreign records):
 *   issue 15's cases;
 * - run-program.ts: one whole run, rounds of concurrent tasks with checks between them;
 * - settings.ts, check-property.ts: run counts, seeds, sizes, bounded shrinking;
 * - sequential-commands.ts: the first model-based test (two sessions, one call at a time).
 */

import {
  type DamagedLivePlan,
  type DeadRunPlan,
  describeDamagedLive,
  describeDeadRun,
  describeFence,
  describeForeignCancel,
  describeRepairRace,
  type FencePlan,
  type ForeignCancelPlan,
  type RepairRacePlan,
} from './race-plans.js';

/** E2: the store option `journal.durability`. */
export type Durability = 'terminal' | 'group' | 'each';

/** What stays fixed for one run. */
export interface WorldConfig {
  /** Session slots driven at once (3–6). */
  readonly sessions: number;
  /** C4: `cache.maxSessions`, tiny on purpose so every round evicts. */
  readonly cacheSize: number;
  readonly durability: Durability;
  /**
   * Whether every adapter call is a scheduling point too (fast-check then also orders the
   * store's own backend calls), or only the steps are (the store's calls race freely, at
   * the backend's own pace: the races of a real disk).
   */
  readonly interleaveAdapterCalls: boolean;
  /**
   * E4: whether live runs write checkpoints (heartbeats). Off where a run must be able to
   * look dead to another instance while its handle lives on (a worker that hung: D4, E6, F1).
   */
  readonly heartbeats: boolean;
}

/**
 * A copy of a session that the application saves instead of the live object (B4, B5):
 * - `spread-append`, `clone-append`: a copy at the live revision with one message more
 *   (accepted: it becomes the live session);
 * - `spread-shrink`: a copy at the live revision without a stored message and with a
 *   stale pending turn (refused: ShrinkRefusedError);
 * - `summary-spread`: `{ ...summaryView, pending: null }` (refused: it drops the messages);
 * - `summary-view`: the summary view itself (refused: SummaryOnlyError);
 * - `stale-append`: a deep copy of an older revision with one message more (refused:
 *   RevisionConflictError).
 */
export type CopyKind =
  | 'spread-append'
  | 'clone-append'
  | 'spread-shrink'
  | 'summary-spread'
  | 'summary-view'
  | 'stale-append';

/** Adapter primitives a step can meet a transient fault (EIO) on. */
export type FaultPoint = 'putDocument' | 'getDocument' | 'deleteDocument' | 'appendLog' | 'readLog';

/** How a stream ends; `abandon` leaves the run live until the next restart (F1). */
export type StreamEnd = 'complete' | 'cancel' | 'fail' | 'abandon';

export interface StreamToken {
  readonly text: string;
  /** Scheduling points before the append: other tasks may run there. */
  readonly pauses: number;
  /**
   * Real milliseconds the model "thinks" before this token (0–4). Not a wait for anything
   * and never part of an assertion: a backend's own timers (a group commit, a journal
   * applier) run on wall time, where no scheduler reaches, and a stream that spans them
   * is how a reader meets them mid-write (E2).
   */
  readonly thinkMs: number;
}

export type StreamFault =
  | { point: 'putDocument'; at: 'begin' | 'end' }
  | { point: 'readLog'; at: 'end' }
  | { point: 'appendLog'; at: number };

export interface StreamPlan {
  readonly question: string;
  /** Names of the attachments given to beginRun (E1). */
  readonly attachments: readonly string[];
  readonly tokens: readonly StreamToken[];
  readonly end: StreamEnd;
  /**
   * A transient fault inside the stream: at beginRun (`putDocument`), on the append of
   * token number `at` (`appendLog`), or when the run ends (`readLog`, `putDocument`).
   */
  readonly fault?: StreamFault;
}

/** One step of a session's task. Steps of one task run in order; tasks run at once. */
export type SessionStep =
  /** `hold`: the application keeps the object create returns (else it goes by id, as a server does). */
  | { kind: 'create'; messages: readonly string[]; fsync: boolean; hold: boolean }
  /** Load and keep the object (C4: it must stay the live session). */
  | { kind: 'load' }
  /** Load by id, check, let go (a server handling one request). */
  | { kind: 'read' }
  | { kind: 'drop' }
  | { kind: 'edit'; text: string }
  | { kind: 'save'; fsync: boolean }
  | { kind: 'loadEditSave'; text: string; fsync: boolean }
  | { kind: 'undo'; count: number }
  | { kind: 'copy'; copy: CopyKind; text: string; fsync: boolean }
  | { kind: 'summary' }
  | { kind: 'rename'; hold: boolean }
  | { kind: 'renameOntoParent' }
  | { kind: 'delete' }
  /** Another server instance deletes the session while this one holds it cached (B8). */
  | { kind: 'deleteElsewhere' }
  | { kind: 'saveDeleted' }
  | { kind: 'stream'; stream: StreamPlan }
  | { kind: 'foreignCancel'; plan: ForeignCancelPlan }
  | { kind: 'fence'; plan: FencePlan }
  | { kind: 'repairRace'; plan: RepairRacePlan }
  | { kind: 'damagedLive'; plan: DamagedLivePlan }
  | { kind: 'deadRun'; plan: DeadRunPlan }
  | { kind: 'tick' }
  | { kind: 'pause' };

/** A step, possibly meeting one transient fault (then retried once, without it). */
export interface PlannedStep {
  readonly step: SessionStep;
  readonly fault?: FaultPoint;
}

/** One `withLock` of a lock task: which name of which slot, held for how many scheduling points. */
export interface LockHold {
  readonly slot: number;
  /** Index into the slot's names: 0 is its first id, 1 and 2 the ids renames move it to. */
  readonly name: number;
  readonly hold: number;
}

/**
 * What happens between two rounds, when no task is running: nothing, a flushAll, a
 * graceful restart, a process death, or one durable write of the spare slot while the
 * backend itself fails once inside (its index or its documents; see the initializer's
 * `injectBackendFault`), alone so that no other call can meet that fault.
 */
export type Interlude = 'none' | 'flush' | 'close' | 'kill' | 'indexFault' | 'documentFault';

export interface Round {
  /** One task per session slot (index = slot). */
  readonly tasks: readonly (readonly PlannedStep[])[];
  /** Tasks that only take locks, at the same time as the session tasks (D1, D2). */
  readonly lockTasks: readonly (readonly LockHold[])[];
  readonly afterwards: Interlude;
}

export interface Program {
  readonly config: WorldConfig;
  readonly rounds: readonly Round[];
}

/** A compact, readable form for counterexamples. */
export function describeProgram(program: Program): string {
  const { config } = program;
  const lines = [
    `config: ${config.sessions} sessions, cache.maxSessions ${config.cacheSize}, journal.durability '${config.durability}', ${config.interleaveAdapterCalls ? 'every adapter call scheduled' : 'steps scheduled, adapter calls free'}${config.heartbeats ? '' : ', no checkpoints'}`,
  ];
  program.rounds.forEach((round, roundIndex) => {
    lines.push(`round ${roundIndex + 1}:`);
    round.tasks.forEach((task, slot) => {
      if (task.length > 0) lines.push(`  slot ${slot}: ${task.map(describeStep).join('; ')}`);
    });
    round.lockTasks.forEach((task, index) => {
      const holds = task.map(
        (hold) => `withLock(slot ${hold.slot} name ${hold.name}, hold ${hold.hold})`,
      );
      if (holds.length > 0) lines.push(`  locks ${index}: ${holds.join('; ')}`);
    });
    lines.push(`  afterwards: ${round.afterwards}`);
  });
  return lines.join('\n');
}

/** A short name of a step for the history log (streams by their question and size). */
export function nameStep(planned: PlannedStep): string {
  const { step } = planned;
  if (step.kind !== 'stream') return describeStep(planned);
  const { stream } = step;
  const fault = stream.fault === undefined ? '' : ' [EIO]';
  return `stream(${JSON.stringify(stream.question)}, ${stream.tokens.length} tokens → ${stream.end})${fault}`;
}

export function describeStep(planned: PlannedStep): string {
  const { step } = planned;
  const fault = planned.fault === undefined ? '' : ` [EIO on ${planned.fault}]`;
  switch (step.kind) {
    case 'create':
      return `create(${JSON.stringify(step.messages)}, fsync ${step.fsync}${step.hold ? ', held' : ''})${fault}`;
    case 'rename':
      return `rename(${step.hold ? 'held' : 'by id'})${fault}`;
    case 'edit':
      return `edit(${JSON.stringify(step.text)})`;
    case 'save':
      return `save(fsync ${step.fsync})${fault}`;
    case 'loadEditSave':
      return `loadEditSave(${JSON.stringify(step.text)}, fsync ${step.fsync})${fault}`;
    case 'undo':
      return `undo(${step.count})${fault}`;
    case 'copy':
      return `copy(${step.copy}, fsync ${step.fsync})${fault}`;
    case 'stream':
      return describeStream(step.stream);
    case 'foreignCancel':
      return describeForeignCancel(step.plan);
    case 'fence':
      return describeFence(step.plan);
    case 'repairRace':
      return describeRepairRace(step.plan);
    case 'damagedLive':
      return describeDamagedLive(step.plan);
    case 'deadRun':
      return describeDeadRun(step.plan);
    default:
      return `${step.kind}${fault}`;
  }
}

function describeStream(stream: StreamPlan): string {
  const tokens = stream.tokens.map(
    (token) =>
      `${'~'.repeat(token.pauses)}${token.thinkMs > 0 ? `+${token.thinkMs}ms ` : ''}${token.text}`,
  );
  const attachments =
    stream.attachments.length > 0 ? `, attachments ${JSON.stringify(stream.attachments)}` : '';
  const fault =
    stream.fault === undefined
      ? ''
      : ` [EIO on ${stream.fault.point} at ${typeof stream.fault.at === 'number' ? `token ${stream.fault.at}` : stream.fault.at}]`;
  return `stream(${JSON.stringify(stream.question)}${attachments}: ${tokens.join(' ')} → ${stream.end})${fault}`;
}
