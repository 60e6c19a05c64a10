import { expect } from 'vitest';
import { type ExpectedTurn, tokensOf } from './expected-turns.js';
import type { RepairRacePlan } from './race-plans.js';
import {
  atRest,
  beginTurn,
  FAILURE,
  loadsAgree,
  markerOf,
  passGrace,
  setToolCalls,
  setTranscript,
  transcriptOf,
} from './race-support.js';
import { expectJournal } from './run-checks.js';
import type { SessionModel } from './session-model.js';
import { attempt, describeError, mustResolve } from './step-checks.js';
import type { ModelWorld } from './world.js';

/**
 * E6, F1, F3: a quiet run past the grace period is cancelled (or failed) by its own handle
 * while the other instance repairs its turn, in whatever order the scheduler picks. The
 * cancel resolves as cancelled; the transcript has the question, exactly the acknowledged
 * tokens and one marker, the one the journal's terminal state calls for.
 */
export async function runRepairRace(
  world: ModelWorld,
  model: SessionModel,
  plan: RepairRacePlan,
  label: string,
): Promise<void> {
  if (!atRest(world, model, label)) return;
  const other = await world.other();
  const prefix = [...model.working];
  const toolCallsBefore = model.toolCalls;
  const run = await beginTurn(world, world.store, model, plan.question, [], label);
  for (const [index, text] of plan.tokens.entries()) {
    await mustResolve(world, `${label}: append token ${index} ${JSON.stringify(text)}`, () =>
      run.append({ type: 'token', data: { text } }),
    );
  }
  await passGrace(world, label);
  const ending = (async () => {
    for (let pause = 0; pause < plan.endPauses; pause++)
      await world.gate(`${label}: before ${plan.end}`);
    world.history.note(`${label}: run.${plan.end}() called`);
    return attempt(() => (plan.end === 'cancel' ? run.cancel() : run.fail({ message: FAILURE })));
  })();
  const repairing = (async () => {
    for (let pause = 0; pause < plan.repairPauses; pause++)
      await world.gate(`${label}: before the repair`);
    world.history.note(`${label}: other.load (repair) called`);
    return attempt(() => other.load(model.id, { refresh: true }));
  })();
  const [ended, repaired] = await Promise.all([ending, repairing]);
  if (!repaired.ok) {
    world.fail(`F3: ${label}: the other instance's load failed: ${describeError(repaired.error)}`);
  }
  if (!ended.ok) {
    world.fail(
      `E6: ${label}: run.${plan.end}() racing a repair failed: ${describeError(ended.error)}`,
    );
  }
  world.history.note(`${label}: run.${plan.end}() → ${JSON.stringify(ended.value)}`);
  world.expectEqual(
    ended.value,
    { cancelled: true, sessionId: model.id, runId: run.runId },
    `E6: ${label}: run.${plan.end}() racing the repair ends the run as asked`,
  );
  expect(run.active, `D4: ${label}: the run is over`).toBe(false);
  const turn: ExpectedTurn = {
    question: plan.question,
    attachments: [],
    // Whichever instance wrote the turn first decides these flags.
    questionRecovered: 'either',
    events: tokensOf(plan.tokens),
    partial: true,
    recovered: 'either',
    marker:
      plan.end === 'cancel'
        ? { kind: 'marker', type: 'cancelled', runId: run.runId }
        : markerOf('errored', run.runId),
  };
  setTranscript(model, transcriptOf(prefix, turn));
  setToolCalls(model, toolCallsBefore, { runId: run.runId, turn });
  model.track({
    sessionId: model.id,
    runId: run.runId,
    marker: plan.end === 'cancel' ? 'cancelled' : 'errored',
    agreesWithJournal: true,
  });
  await loadsAgree(world, model, `E6, F1: ${label}: one marker, agreeing with the journal`);
  await expectJournal(
    world,
    world.store,
    model.id,
    run.runId,
    turn.events,
    plan.end === 'cancel' ? 'interrupted-by-user' : 'errored',
    `E6: ${label}`,
  );
}
