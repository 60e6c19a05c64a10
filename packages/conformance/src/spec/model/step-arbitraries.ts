import fc from 'fast-check';
import type {
  CopyKind,
  Durability,
  FaultPoint,
  PlannedStep,
  SessionStep,
  StreamFault,
  StreamPlan,
} from './program.js';

/**
 * The arbitraries of single steps (sessions, copies, streams and their faults); the
 * profiles in arbitraries.ts weigh them into programs.
 */

export interface Scale {
  minSessions: number;
  maxSessions: number;
  maxTokens: number;
  /** Weight of a token with a real pause of 1–3 ms, against 3 for none. */
  thinkWeight: number;
}

export type Weighted<T> = Array<{ arbitrary: fc.Arbitrary<T>; weight: number }>;

export const word = fc.string({
  unit: fc.constantFrom(...'abcdefghijklmnop'),
  minLength: 1,
  maxLength: 5,
});
export const fsync = fc.boolean();
export const durability: fc.Arbitrary<Durability> = fc.constantFrom('terminal', 'group', 'each');

/** `holdChance` in 4: how often the application keeps the objects create and rename return. */
export function createStep(
  holdChance: number,
): fc.Arbitrary<Extract<SessionStep, { kind: 'create' }>> {
  return fc
    .record({ messages: fc.array(word, { maxLength: 3 }), fsync, hold: holds(holdChance) })
    .map((fields) => ({ kind: 'create', ...fields }));
}

function holds(chance: number): fc.Arbitrary<boolean> {
  return fc.nat({ max: 3 }).map((roll) => roll < chance);
}
export const load = fc.constant<SessionStep>({ kind: 'load' });
export const read = fc.constant<SessionStep>({ kind: 'read' });
export const drop = fc.constant<SessionStep>({ kind: 'drop' });
export const edit = word.map((text): SessionStep => ({ kind: 'edit', text }));
export const save = fsync.map((value): SessionStep => ({ kind: 'save', fsync: value }));
export const loadEditSave = fc
  .record({ text: word, fsync })
  .map((fields): SessionStep => ({ kind: 'loadEditSave', ...fields }));
export const undo = fc
  .integer({ min: 1, max: 2 })
  .map((count): SessionStep => ({ kind: 'undo', count }));
const copyKind: fc.Arbitrary<CopyKind> = fc.constantFrom(
  'spread-append',
  'clone-append',
  'spread-shrink',
  'summary-spread',
  'summary-view',
  'stale-append',
);
export const copy = fc
  .record({ copy: copyKind, text: word, fsync })
  .map((fields): SessionStep => ({ kind: 'copy', ...fields }));
export const summary = fc.constant<SessionStep>({ kind: 'summary' });
export function renameStep(holdChance: number): fc.Arbitrary<SessionStep> {
  return holds(holdChance).map((hold): SessionStep => ({ kind: 'rename', hold }));
}
export const renameOntoParent = fc.constant<SessionStep>({ kind: 'renameOntoParent' });
export const remove = fc.constant<SessionStep>({ kind: 'delete' });
export const removeElsewhere = fc.constant<SessionStep>({ kind: 'deleteElsewhere' });
export const saveDeleted = fc.constant<SessionStep>({ kind: 'saveDeleted' });
export const tick = fc.constant<SessionStep>({ kind: 'tick' });
export const pause = fc.constant<SessionStep>({ kind: 'pause' });

function streamPlan(scale: Scale, withFaults: boolean): fc.Arbitrary<StreamPlan> {
  const thinkMs = fc.oneof(
    { arbitrary: fc.constant(0), weight: 3 },
    { arbitrary: fc.integer({ min: 1, max: 3 }), weight: scale.thinkWeight },
  );
  // size 'max': lengths spread over the whole range (fast-check's default keeps them short).
  const tokens = fc.array(fc.record({ text: word, pauses: fc.nat({ max: 2 }), thinkMs }), {
    maxLength: scale.maxTokens,
    size: 'max',
  });
  const end = fc.constantFrom('complete', 'complete', 'cancel', 'fail', 'abandon') as fc.Arbitrary<
    StreamPlan['end']
  >;
  const base = fc.record({
    question: word,
    attachments: fc.array(
      word.map((name) => `${name}.png`),
      { maxLength: 2 },
    ),
    tokens,
    end,
  });
  if (!withFaults) return base;
  const fault: fc.Arbitrary<StreamFault> = fc.oneof(
    fc
      .constantFrom('begin' as const, 'end' as const)
      .map((at) => ({ point: 'putDocument' as const, at })),
    fc.constant({ point: 'readLog' as const, at: 'end' as const }),
    fc.nat({ max: scale.maxTokens - 1 }).map((at) => ({ point: 'appendLog' as const, at })),
  );
  return fc
    .tuple(base, fc.option(fault, { nil: undefined, freq: 2 }))
    .map(([plan, chosen]) => (chosen === undefined ? plan : { ...plan, fault: chosen }));
}

export function stream(scale: Scale, withFaults: boolean): fc.Arbitrary<SessionStep> {
  return streamPlan(scale, withFaults).map(
    (plan): SessionStep => ({ kind: 'stream', stream: plan }),
  );
}

/** The primitive a faulted step of this kind meets, if any. */
function faultPointFor(step: SessionStep): FaultPoint | null {
  switch (step.kind) {
    case 'create':
    case 'save':
    case 'loadEditSave':
    case 'undo':
    case 'copy':
    case 'rename':
      return 'putDocument';
    case 'load':
    case 'read':
      return 'getDocument';
    case 'delete':
      return 'deleteDocument';
    default:
      return null;
  }
}

export function planned(
  steps: Weighted<SessionStep>,
  faultFrequency: number,
): fc.Arbitrary<PlannedStep> {
  const step = fc.oneof(...steps);
  if (faultFrequency === 0) return step.map((value) => ({ step: value }));
  return fc.tuple(step, fc.nat({ max: faultFrequency - 1 })).map(([value, roll]) => {
    const point = faultPointFor(value);
    return point === null || roll !== 0 ? { step: value } : { step: value, fault: point };
  });
}
