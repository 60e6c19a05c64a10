import fc from 'fast-check';
import type {
  Interlude,
  LockHold,
  PlannedStep,
  Program,
  Round,
  SessionStep,
  WorldConfig,
} from './program.js';
import {
  damagedLiveStep,
  deadRunStep,
  fenceStep,
  foreignCancelStep,
  repairRaceStep,
} from './race-arbitraries.js';
import {
  copy,
  createStep,
  drop,
  durability,
  edit,
  load,
  loadEditSave,
  pause,
  planned,
  read,
  remove,
  removeElsewhere,
  renameOntoParent,
  renameStep,
  type Scale,
  save,
  saveDeleted,
  stream,
  summary,
  tick,
  undo,
  type Weighted,
} from './step-arbitraries.js';

/**
 * Which operations a test draws, and how often. Every profile drives several sessions at
 * once; each leans on the operations of the clauses it is named after, so a shrunk
 * counterexample stays short.
 */
export type ProfileName =
  | 'sessions'
  | 'streams'
  | 'locks'
  | 'faults'
  | 'instances'
  | 'journals'
  | 'everything';

/**
 * How big the generated worlds are. `small` keeps `pnpm test` bounded; `large` is for
 * soak runs: up to 20 sessions streaming up to 40 tokens each with small real pauses, the
 * load at which races against a backend's own timers show (issue 14, defect 1).
 */
export type ProgramSize = 'small' | 'large';

const SCALES: Record<ProgramSize, Scale> = {
  small: { minSessions: 3, maxSessions: 6, maxTokens: 16, thinkWeight: 1 },
  large: { minSessions: 12, maxSessions: 24, maxTokens: 40, thinkWeight: 9 },
};

interface Profile {
  /** In 4: how often the application keeps the objects create and rename return. */
  holdChance: number;
  steps: Weighted<SessionStep>;
  /** One step in this many meets a fault (0: never). */
  faultFrequency: number;
  maxSteps: number;
  lockTasks: number;
  interludes: Weighted<Interlude>;
  maxRounds: number;
  /** E4: whether live runs write checkpoints (see WorldConfig.heartbeats). @default true */
  heartbeats?: boolean;
  /**
   * Fewer slots than the small scale says: each issue-15 step is a whole scenario (two instances,
   * a worker that dies, planted records), so a few slots already race each other.
   */
  maxSessions?: number;
}

function profile(name: ProfileName, scale: Scale): Profile {
  const withHolds = (holdChance: number, rest: Omit<Profile, 'holdChance'>): Profile => ({
    holdChance,
    ...rest,
  });
  switch (name) {
    case 'sessions':
      return withHolds(4, {
        steps: [
          { arbitrary: createStep(4), weight: 1 },
          { arbitrary: load, weight: 4 },
          { arbitrary: read, weight: 1 },
          { arbitrary: drop, weight: 1 },
          { arbitrary: edit, weight: 4 },
          { arbitrary: save, weight: 3 },
          { arbitrary: loadEditSave, weight: 2 },
          { arbitrary: undo, weight: 1 },
          { arbitrary: copy, weight: 4 },
          { arbitrary: summary, weight: 1 },
          { arbitrary: remove, weight: 1 },
          { arbitrary: removeElsewhere, weight: 1 },
          { arbitrary: saveDeleted, weight: 1 },
          { arbitrary: pause, weight: 2 },
        ],
        faultFrequency: 0,
        maxSteps: 7,
        lockTasks: 0,
        interludes: interludes({ none: 2, flush: 2, close: 2, kill: 1 }),
        maxRounds: 3,
      });
    case 'streams':
      return withHolds(0, {
        steps: [
          { arbitrary: stream(scale, false), weight: 6 },
          { arbitrary: loadEditSave, weight: 1 },
          { arbitrary: read, weight: 2 },
          { arbitrary: tick, weight: 1 },
          { arbitrary: pause, weight: 1 },
        ],
        faultFrequency: 0,
        maxSteps: 3,
        lockTasks: 0,
        interludes: interludes({ none: 2, flush: 1, close: 2, kill: 2 }),
        maxRounds: 3,
      });
    case 'locks':
      return withHolds(0, {
        steps: [
          { arbitrary: renameStep(0), weight: 4 },
          { arbitrary: renameOntoParent, weight: 1 },
          { arbitrary: loadEditSave, weight: 2 },
          { arbitrary: read, weight: 1 },
          { arbitrary: pause, weight: 2 },
        ],
        faultFrequency: 0,
        maxSteps: 4,
        lockTasks: 5,
        interludes: interludes({ none: 3, close: 1, kill: 1 }),
        maxRounds: 2,
      });
    case 'faults':
      return withHolds(2, {
        steps: [
          { arbitrary: createStep(2), weight: 1 },
          { arbitrary: load, weight: 2 },
          { arbitrary: edit, weight: 2 },
          { arbitrary: save, weight: 3 },
          { arbitrary: loadEditSave, weight: 3 },
          { arbitrary: undo, weight: 1 },
          { arbitrary: copy, weight: 2 },
          { arbitrary: renameStep(2), weight: 1 },
          { arbitrary: remove, weight: 1 },
          { arbitrary: stream(scale, true), weight: 3 },
        ],
        faultFrequency: 2,
        maxSteps: 4,
        lockTasks: 0,
        interludes: interludes({
          none: 1,
          flush: 2,
          close: 2,
          kill: 2,
          indexFault: 2,
          documentFault: 1,
        }),
        maxRounds: 3,
      });
    case 'instances':
      return withHolds(0, {
        steps: [
          { arbitrary: foreignCancelStep(scale), weight: 3 },
          { arbitrary: fenceStep, weight: 3 },
          { arbitrary: repairRaceStep, weight: 3 },
          { arbitrary: stream(scale, false), weight: 1 },
          { arbitrary: read, weight: 1 },
          { arbitrary: loadEditSave, weight: 1 },
          { arbitrary: pause, weight: 1 },
        ],
        faultFrequency: 0,
        maxSteps: 2,
        lockTasks: 0,
        interludes: interludes({ none: 2, flush: 1, close: 1, kill: 1 }),
        maxRounds: 2,
        heartbeats: false,
        maxSessions: 4,
      });
    case 'journals':
      return withHolds(0, {
        steps: [
          { arbitrary: deadRunStep, weight: 4 },
          { arbitrary: damagedLiveStep, weight: 3 },
          { arbitrary: stream(scale, false), weight: 1 },
          { arbitrary: read, weight: 1 },
          { arbitrary: pause, weight: 1 },
        ],
        faultFrequency: 0,
        maxSteps: 2,
        lockTasks: 0,
        interludes: interludes({ none: 2, close: 1, kill: 1 }),
        maxRounds: 2,
        heartbeats: false,
        maxSessions: 4,
      });
    case 'everything':
      return withHolds(2, {
        steps: [
          { arbitrary: createStep(2), weight: 1 },
          { arbitrary: load, weight: 2 },
          { arbitrary: read, weight: 1 },
          { arbitrary: drop, weight: 1 },
          { arbitrary: edit, weight: 3 },
          { arbitrary: save, weight: 2 },
          { arbitrary: loadEditSave, weight: 2 },
          { arbitrary: undo, weight: 1 },
          { arbitrary: copy, weight: 3 },
          { arbitrary: summary, weight: 1 },
          { arbitrary: renameStep(2), weight: 2 },
          { arbitrary: renameOntoParent, weight: 1 },
          { arbitrary: remove, weight: 1 },
          { arbitrary: removeElsewhere, weight: 1 },
          { arbitrary: saveDeleted, weight: 1 },
          { arbitrary: stream(scale, true), weight: 4 },
          { arbitrary: tick, weight: 1 },
          { arbitrary: pause, weight: 1 },
        ],
        faultFrequency: 6,
        maxSteps: 5,
        lockTasks: 2,
        interludes: interludes({ none: 2, flush: 1, close: 2, kill: 2, indexFault: 1 }),
        maxRounds: 3,
      });
  }
}

function interludes(weights: Partial<Record<Interlude, number>>): Weighted<Interlude> {
  return Object.entries(weights).map(([value, weight]) => ({
    arbitrary: fc.constant(value as Interlude),
    weight: weight ?? 0,
  }));
}

/**
 * Lock holds crowd onto the first two slots and their first two names, so holders of an
 * id and of the id a rename moves it to meet often (D2), and stay inside for a while.
 */
function lockTask(sessions: number): fc.Arbitrary<LockHold[]> {
  const hold = fc.record({
    slot: fc.oneof(
      { arbitrary: fc.constant(0), weight: 3 },
      { arbitrary: fc.constant(1), weight: 2 },
      { arbitrary: fc.nat({ max: sessions - 1 }), weight: 1 },
    ),
    name: fc.oneof(
      { arbitrary: fc.constant(0), weight: 2 },
      { arbitrary: fc.constant(1), weight: 2 },
      { arbitrary: fc.constant(2), weight: 1 },
    ),
    hold: fc.nat({ max: 4 }),
  });
  return fc.array(hold, { minLength: 1, maxLength: 3 });
}

function round(chosen: Profile, config: WorldConfig, first: boolean): fc.Arbitrary<Round> {
  const step = planned(chosen.steps, chosen.faultFrequency);
  const task = fc.array(step, { maxLength: chosen.maxSteps });
  // Every slot starts with a create in the first round: later steps then have a session.
  const firstTask = fc
    .tuple(createStep(chosen.holdChance), task)
    .map(([create, rest]): PlannedStep[] => [{ step: create }, ...rest]);
  const tasks = fc.array(first ? firstTask : task, {
    minLength: config.sessions,
    maxLength: config.sessions,
  });
  const lockTasks = fc.array(lockTask(config.sessions), { maxLength: chosen.lockTasks });
  return fc.record({ tasks, lockTasks, afterwards: fc.oneof(...chosen.interludes) });
}

/** Programs for one profile: a world configuration and 1–3 rounds of concurrent tasks. */
export function programs(name: ProfileName, size: ProgramSize = 'small'): fc.Arbitrary<Program> {
  const scale = SCALES[size];
  const chosen = profile(name, scale);
  // A soak run (large) keeps its large worlds.
  const cap = size === 'small' ? chosen.maxSessions : undefined;
  const maxSessions = Math.min(scale.maxSessions, cap ?? scale.maxSessions);
  const config: fc.Arbitrary<WorldConfig> = fc.record({
    sessions: fc.integer({ min: Math.min(scale.minSessions, maxSessions), max: maxSessions }),
    cacheSize: fc.integer({ min: 1, max: 2 }),
    durability,
    interleaveAdapterCalls: fc.boolean(),
    heartbeats: fc.constant(chosen.heartbeats ?? true),
  });
  return config.chain((world) =>
    fc
      .tuple(
        round(chosen, world, true),
        fc.array(round(chosen, world, false), { maxLength: chosen.maxRounds - 1 }),
      )
      .map(([first, rest]): Program => ({ config: world, rounds: [first, ...rest] })),
  );
}
