import {
  type CancelOutcome,
  type JournalRecord,
  JournalSealedError,
  RunNotActiveError,
} from '@keepsake/core';
import { expect } from 'vitest';
import { type ExpectedTurn, tokensOf } from './expected-turns.js';
import type { ForeignCancelPlan } from './race-plans.js';
import {
  atRest,
  beginTurn,
  expectRefused,
  FAILURE,
  otherSees,
  resync,
  setToolCalls,
  setTranscript,
  transcriptOf,
} from './race-support.js';
import { expectJournal } from './run-checks.js';
import type { SessionModel } from './session-model.js';
import { attempt, describeError, mustResolve, type Outcome } from './step-checks.js';
import type { ModelWorld } from './world.js';

/**
 * E6: the other instance cancels a run streaming on this one, queued appends and all. The
 * cancel wins; every append either resolved (and its token is in the kept answer) or was
 * refused with JournalSealedError; the partial answer is exactly the acknowledged tokens,
 * with one cancel marker, and the journal ends interrupted by the user. What the run does
 * afterwards changes nothing, and once it learned, `run.active` is false (D4).
 */
export async function runForeignCancel(
  world: ModelWorld,
  model: SessionModel,
  plan: ForeignCancelPlan,
  label: string,
): Promise<void> {
  if (!atRest(world, model, label)) return;
  const other = await world.other();
  const prefix = [...model.working];
  const toolCallsBefore = model.toolCalls;
  const run = await beginTurn(world, world.store, model, plan.question, [], label);
  const acknowledged: string[] = [];
  for (const [index, text] of plan.first.entries()) {
    await mustResolve(world, `${label}: append token ${index} ${JSON.stringify(text)}`, () =>
      run.append({ type: 'token', data: { text } }),
    );
    acknowledged.push(text);
  }
  const queued: Array<Promise<Outcome<JournalRecord>>> = [];
  let cancelling: Promise<Outcome<CancelOutcome>> | null = null;
  for (let index = 0; index <= plan.queued.length; index++) {
    if (index === plan.cancelAfter) {
      world.history.note(`${label}: the other instance calls cancelRun`);
      cancelling = attempt(() => other.cancelRun(model.id, plan.byRunId ? run.runId : undefined));
    }
    const text = plan.queued[index];
    if (text === undefined) break;
    queued.push(attempt(() => run.append({ type: 'token', data: { text } })));
    await world.gate(`${label}: queued append ${index} sent`);
  }
  const cancel = await cancelling!;
  const settled = await Promise.all(queued);
  if (!cancel.ok) {
    world.history.note(`${label}: cancelRun → rejected: ${describeError(cancel.error)}`);
    world.fail(
      `E6: ${label}: a cancel from another instance wins against the run's stream, but it failed: ${describeError(cancel.error)}`,
    );
  }
  world.history.note(`${label}: cancelRun → ${JSON.stringify(cancel.value)}`);
  world.expectEqual(
    cancel.value,
    { cancelled: true, sessionId: model.id, runId: run.runId },
    `E6: ${label}: the other instance's cancel wins`,
  );
  let refused = 0;
  for (const [index, outcome] of settled.entries()) {
    if (outcome.ok) {
      acknowledged.push(plan.queued[index]!);
      continue;
    }
    refused++;
    expectRefused(world, outcome, JournalSealedError, `E6: ${label}: queued append ${index}`);
  }
  world.history.note(
    `${label}: ${settled.length - refused} queued appends resolved, ${refused} refused`,
  );
  if (refused > 0) {
    expect(
      run.active,
      `D4: ${label}: an append that found the journal sealed makes run.active false`,
    ).toBe(false);
  }
  const after = `${label}: run.${plan.afterwards}() after the cancel`;
  switch (plan.afterwards) {
    case 'append':
      expectRefused(
        world,
        await attempt(() => run.append({ type: 'token', data: { text: 'too late' } })),
        JournalSealedError,
        `E6: ${after}`,
      );
      break;
    case 'complete':
      expectRefused(world, await attempt(() => run.complete()), RunNotActiveError, `D4: ${after}`);
      break;
    case 'cancel': {
      // D4, E6: cancelling a run another instance already cancelled changes nothing, and
      // says so: a stale handle once appended a second cancel record and said it cancelled.
      const outcome = await mustResolve(world, after, () => run.cancel());
      expect(outcome.cancelled, `D4, E6: ${after} cancels nothing: it already was`).toBe(false);
      break;
    }
    case 'fail': {
      // The turn was cancelled: a failure reported now is not what happened to it (E6).
      const outcome = await mustResolve(world, after, () => run.fail({ message: FAILURE }));
      expect(outcome.cancelled, `E6: ${after} fails nothing: the run was already cancelled`).toBe(
        false,
      );
      break;
    }
  }
  expect(run.active, `D4: ${after}: the run knows it no longer owns the turn`).toBe(false);
  const turn: ExpectedTurn = {
    question: plan.question,
    attachments: [],
    questionRecovered: false,
    events: tokensOf(acknowledged),
    partial: true,
    recovered: false,
    marker: { kind: 'marker', type: 'cancelled', runId: run.runId },
  };
  setTranscript(model, transcriptOf(prefix, turn));
  setToolCalls(model, toolCallsBefore, { runId: run.runId, turn });
  model.track({
    sessionId: model.id,
    runId: run.runId,
    marker: 'cancelled',
    agreesWithJournal: true,
  });
  await resync(
    world,
    model,
    `E6: ${label}: after the cancel (the kept answer is exactly the acknowledged tokens)`,
  );
  await otherSees(world, model, `E6: ${label}: after the cancel`);
  await expectJournal(
    world,
    world.store,
    model.id,
    run.runId,
    turn.events,
    'interrupted-by-user',
    `E6: ${label}`,
  );
  // E2, D4: one ending, the other instance's: nothing the run did afterwards added another.
  const endings = (
    await mustResolve(world, `${label}: readJournal`, () =>
      world.store.readJournal(model.id, run.runId),
    )
  ).records
    .filter((record) => ['cancel', 'error', 'done'].includes(record.type))
    .map((record) => record.type);
  world.expectEqual(endings, ['cancel'], `D4, E2: ${label}: the journal's endings`);
}
