import fc from 'fast-check';
import type { SessionStep } from './program.js';
import type {
  Damage,
  DamagedLivePlan,
  DeadJournal,
  DeadRunPlan,
  FencePlan,
  ForeignCancelPlan,
  LaterTurn,
  RepairRacePlan,
  RunEvent,
} from './race-plans.js';
import { type Scale, word } from './step-arbitraries.js';

/**
 * The arbitraries of issue 15's steps (see race-plans.ts). Each step is a whole scenario on
 * one session slot; the profiles in arbitraries.ts weigh them against the other steps.
 */

const token: fc.Arbitrary<RunEvent> = word.map((text) => ({ type: 'token', text }));
const tool: fc.Arbitrary<RunEvent> = fc.boolean().map((result) => ({ type: 'tool', result }));

function events(maxLength: number): fc.Arbitrary<RunEvent[]> {
  return fc.array(fc.oneof({ arbitrary: token, weight: 4 }, { arbitrary: tool, weight: 1 }), {
    maxLength,
  });
}

const attachments = fc.array(
  word.map((name) => `${name}.png`),
  { maxLength: 1 },
);

const laterTurn: fc.Arbitrary<LaterTurn> = fc.record({ question: word, events: events(3) });

const damage: fc.Arbitrary<Damage> = fc.constantFrom(
  'garbage',
  'wrongSequence',
  'otherRun',
  'reusedEventId',
);

function foreignCancel(scale: Scale): fc.Arbitrary<ForeignCancelPlan> {
  const queuedMax = Math.max(8, Math.min(40, scale.maxTokens));
  return fc
    .record({
      question: word,
      first: fc.array(word, { maxLength: 3 }),
      queued: fc.array(word, { minLength: 1, maxLength: queuedMax }),
      cancelAt: fc.nat({ max: 1000 }),
      byRunId: fc.boolean(),
      afterwards: fc.constantFrom('append', 'complete', 'cancel', 'fail') as fc.Arbitrary<
        ForeignCancelPlan['afterwards']
      >,
    })
    .map(({ cancelAt, ...plan }) => ({
      ...plan,
      cancelAfter: cancelAt % (plan.queued.length + 1),
    }));
}

const fence: fc.Arbitrary<FencePlan> = fc
  .record({
    question: word,
    attachments,
    early: events(3),
    lateBefore: events(3),
    laterTurn: fc.option(laterTurn, { nil: null }),
    lateAfter: events(3),
    ending: fc.constantFrom('complete', 'completeWith', 'cancel') as fc.Arbitrary<
      FencePlan['ending']
    >,
    text: word,
    primaryLooks: fc.boolean(),
  })
  // Output after a later turn exists only when there is one.
  .map((plan) => (plan.laterTurn === null ? { ...plan, lateAfter: [] } : plan));

const repairRace: fc.Arbitrary<RepairRacePlan> = fc.record({
  question: word,
  tokens: fc.array(word, { maxLength: 3 }),
  end: fc.constantFrom('cancel', 'fail') as fc.Arbitrary<RepairRacePlan['end']>,
  endPauses: fc.nat({ max: 3 }),
  repairPauses: fc.nat({ max: 3 }),
});

/** A reused event id needs an earlier token record to take it from. */
function possibleDamage(chosen: Damage, before: number): Damage {
  return chosen === 'reusedEventId' && before === 0 ? 'garbage' : chosen;
}

const damagedLive: fc.Arbitrary<DamagedLivePlan> = fc
  .record({
    question: word,
    before: fc.array(word, { maxLength: 3 }),
    damage,
    planted: fc.array(word, { maxLength: 2 }),
    after: fc.array(word, { maxLength: 3 }),
    end: fc.constantFrom('complete', 'complete', 'cancel', 'fail') as fc.Arbitrary<
      DamagedLivePlan['end']
    >,
  })
  .map((plan) => ({ ...plan, damage: possibleDamage(plan.damage, plan.before.length) }));

const deadJournal: fc.Arbitrary<DeadJournal> = fc.oneof(
  { arbitrary: fc.constant({ kind: 'intact' as const }), weight: 3 },
  {
    arbitrary: fc
      .constantFrom('error', 'cancel', 'done')
      .map((event) => ({ kind: 'ends' as const, event })),
    weight: 2,
  },
  {
    arbitrary: fc
      .record({ damage, planted: fc.array(word, { maxLength: 2 }) })
      .map((fields) => ({ kind: 'damaged' as const, ...fields })),
    weight: 2,
  },
  {
    arbitrary: fc
      .constantFrom('done', 'token')
      .map((event) => ({ kind: 'foreign' as const, event })),
    weight: 2,
  },
);

/**
 * Late output is planted only where the contract says a later load folds it in: a run that
 * has not ended for good (F2: completed, cancelled or tool limit are for good) and whose
 * journal is trusted (E2).
 */
function stillWatched(journal: DeadJournal): boolean {
  return journal.kind === 'intact' || (journal.kind === 'ends' && journal.event === 'error');
}

const deadRun: fc.Arbitrary<DeadRunPlan> = fc
  .record({
    question: word,
    attachments,
    events: events(4),
    journal: deadJournal,
    repairBy: fc.constantFrom('primary', 'other') as fc.Arbitrary<DeadRunPlan['repairBy']>,
    secondGrace: fc.boolean(),
    late: events(3),
    lateDone: fc.boolean(),
    laterTurn: fc.option(laterTurn, { nil: null }),
    lateAfter: events(3),
  })
  .map((plan) => {
    const journal =
      plan.journal.kind === 'damaged'
        ? {
            ...plan.journal,
            damage: possibleDamage(
              plan.journal.damage,
              plan.events.filter((event) => event.type === 'token').length,
            ),
          }
        : plan.journal;
    const watched = stillWatched(journal);
    return {
      ...plan,
      journal,
      late: watched ? plan.late : [],
      lateDone: watched && plan.lateDone,
      lateAfter: plan.laterTurn === null ? [] : plan.lateAfter,
    };
  });

export function foreignCancelStep(scale: Scale): fc.Arbitrary<SessionStep> {
  return foreignCancel(scale).map((plan): SessionStep => ({ kind: 'foreignCancel', plan }));
}
export const fenceStep = fence.map((plan): SessionStep => ({ kind: 'fence', plan }));
export const repairRaceStep = repairRace.map((plan): SessionStep => ({ kind: 'repairRace', plan }));
export const damagedLiveStep = damagedLive.map(
  (plan): SessionStep => ({ kind: 'damagedLive', plan }),
);
export const deadRunStep = deadRun.map((plan): SessionStep => ({ kind: 'deadRun', plan }));
