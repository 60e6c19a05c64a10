import { type CancelOutcome, type MarkerWording, RunNotActiveError } from '@keepsake/core';
import { expect } from 'vitest';
import type { ExpectedMarker } from './expected-messages.js';
import { answeredTurn, type ExpectedTurn, hasOutput } from './expected-turns.js';
import type { FencePlan, RunEvent } from './race-plans.js';
import {
  atRest,
  beginTurn,
  expectRefused,
  loadsAgree,
  otherSees,
  passGrace,
  setToolCalls,
  setTranscript,
  transcriptOf,
} from './race-support.js';
import { appendEvents, expectJournal, RunEvents, refuseEvents } from './run-checks.js';
import type { SessionModel } from './session-model.js';
import { attempt, mustResolve } from './step-checks.js';
import type { ModelWorld } from './world.js';

/**
 * D4, F1, F2: a run of this store goes quiet past the grace period and the other instance
 * repairs its turn, sealing its journal with a crash record (creating the journal when the
 * run had written nothing). Every later append of the fenced run is refused with
 * `RunTakenOverError`, so every resolved append is in the stored answer, never only in the
 * journal; `run.active` turns false once the run learns, its complete() throws
 * RunNotActiveError and writes nothing, and its cancel still decides while its turn is the
 * last one answered (E6).
 */
export async function runFence(
  world: ModelWorld,
  model: SessionModel,
  plan: FencePlan,
  label: string,
): Promise<void> {
  if (!atRest(world, model, label)) return;
  const other = await world.other();
  const prefix = [...model.working];
  const toolCallsBefore = model.toolCalls;
  const run = await beginTurn(world, world.store, model, plan.question, plan.attachments, label);
  const source = new RunEvents(run.runId, world.env.id('ev'));
  await appendEvents(world, run, source, plan.early, `${label}: early`);
  await passGrace(world, label);
  const folded: RunEvent[] = [...plan.early];
  const turn1 = (
    marker: ExpectedMarker | null,
    partial: ExpectedTurn['partial'] = true,
  ): ExpectedTurn => ({
    question: plan.question,
    attachments: plan.attachments,
    questionRecovered: true,
    events: [...folded],
    partial,
    recovered: true,
    marker,
  });
  const interrupted = (wording: readonly MarkerWording[], watching?: boolean): ExpectedMarker => ({
    kind: 'marker',
    type: 'interrupted',
    runId: run.runId,
    wording,
    ...(watching === undefined ? {} : { watching }),
  });
  // F2: with output the marker says so; without, it says output may still arrive, and after
  // a grace period (another slot may move the clock meanwhile) it turns neutral.
  const waiting = (): ExpectedMarker =>
    hasOutput(folded) ? interrupted(['recovered']) : interrupted(['pending-retry', 'neutral']);
  let later: { runId: string; turn: ExpectedTurn } | null = null;
  /** The model's transcript is now the fenced run's turn, then the later turn if any. */
  const show = (first: ExpectedTurn) => {
    const turns = later === null ? [first] : [first, later.turn];
    setTranscript(model, transcriptOf(prefix, ...turns));
    setToolCalls(
      model,
      toolCallsBefore,
      { runId: run.runId, turn: first },
      ...(later === null ? [] : [later]),
    );
  };

  /**
   * F4: loads again change nothing. This store looks too only when the plan says so: a
   * fenced worker's process usually goes on with what it cached when its run began.
   */
  const look = async (what: string) => {
    if (plan.primaryLooks) await loadsAgree(world, model, what);
    else await otherSees(world, model, `${what} (F4: a load again)`);
  };

  // F1: the other instance finds the run dead and repairs the turn.
  const repaired = await mustResolve(world, `${label}: other.load (repair)`, () =>
    other.load(model.id, { refresh: true }),
  );
  show(
    turn1(
      hasOutput(folded) ? interrupted(['recovered'], true) : interrupted(['pending-retry'], true),
    ),
  );
  world.expectTranscript(repaired, model.working, `F1: ${label}: the other instance's repair`);
  world.expectToolCalls(repaired, model, `F1: ${label}: the repair's tool calls`);
  show(turn1(waiting()));
  await look(`F1: ${label}: after the repair`);

  // D4: the repair sealed the run's journal with its crash record (creating the journal when
  // the run had written nothing yet): every append of the run from now on is refused, so
  // nothing it is told was kept is missing from the answer.
  await refuseEvents(world, run, source, plan.lateBefore, `${label}: late (fenced)`);
  if (plan.lateBefore.length > 0) {
    expect(
      run.active,
      `D4: ${label}: an append that met the repair's crash record makes run.active false`,
    ).toBe(false);
    await otherSees(world, model, `D4: ${label}: a load after the refused late output`);
    await look(`D4: ${label}: after the refused late output`);
  }

  let turn2: ExpectedTurn | null = null;
  if (plan.laterTurn !== null) {
    const run2 = await beginTurn(
      world,
      other,
      model,
      plan.laterTurn.question,
      [],
      `${label}: other`,
    );
    const source2 = new RunEvents(run2.runId, world.env.id('ev'));
    await appendEvents(world, run2, source2, plan.laterTurn.events, `${label}: other's turn`);
    await mustResolve(world, `${label}: other's turn: complete()`, () => run2.complete());
    turn2 = answeredTurn(plan.laterTurn.question, plan.laterTurn.events);
    later = { runId: run2.runId, turn: turn2 };
    model.track({ sessionId: model.id, runId: run2.runId, marker: null, agreesWithJournal: true });
    // F2: a later turn was answered: the earlier marker is settled (a pending-retry one turns neutral).
    show(turn1(waiting()));
    await look(`${label}: after the later turn`);
    await refuseEvents(
      world,
      run,
      source,
      plan.lateAfter,
      `${label}: late after the later turn (fenced)`,
    );
  }

  const learned = !run.active;
  const ending = `${label}: fenced run.${plan.ending === 'cancel' ? 'cancel' : 'complete'}()`;
  let cancelled: CancelOutcome | null = null;
  if (plan.ending === 'cancel') {
    cancelled = await mustResolve(world, ending, () => run.cancel());
  } else {
    const outcome = await attempt(() =>
      plan.ending === 'completeWith'
        ? run.complete({ assistantMessages: [{ role: 'assistant', content: plan.text }] })
        : run.complete(),
    );
    expectRefused(world, outcome, RunNotActiveError, `D4: ${ending}`);
  }
  expect(run.active, `D4: ${ending}: the run knows it no longer owns the turn`).toBe(false);
  // D4: complete() of a fenced run writes nothing, not even the text it was given.
  const journal: RunEvent[] = [...source.written];

  if (turn2 !== null) {
    // D4: the turn was answered by a later one: nothing the fenced run does rewrites it.
    if (cancelled !== null) {
      expect(
        cancelled.cancelled,
        `E6, D4: ${ending} after a later turn was answered changes nothing, and says so`,
      ).toBe(false);
    }
    show(turn1(hasOutput(folded) ? interrupted(['recovered']) : interrupted(['neutral'])));
    model.track({
      sessionId: model.id,
      runId: run.runId,
      marker: 'interrupted',
      agreesWithJournal: false,
    });
    await loadsAgree(world, model, `D4: ${label}: the answered later turn is never rewritten`);
    await expectJournal(
      world,
      world.store,
      model.id,
      run.runId,
      journal,
      undefined,
      `D4: ${label}: the run's journal holds what it appended before the repair, nothing after`,
    );
    return;
  }
  if (cancelled === null) {
    // D4: the refused complete() wrote nothing: the turn stays as the repair ended it.
    show(turn1(waiting()));
    model.track({
      sessionId: model.id,
      runId: run.runId,
      marker: 'interrupted',
      agreesWithJournal: true,
    });
    await loadsAgree(world, model, `D4: ${label}: the fenced run's complete() changed nothing`);
    await expectJournal(
      world,
      world.store,
      model.id,
      run.runId,
      journal,
      'interrupted-by-crash',
      `D4: ${label}`,
    );
    return;
  }
  if (learned) {
    expect(cancelled, `E6: ${ending}: the run already knew it was fenced out`).toEqual({
      cancelled: false,
      reason: 'not-active',
    });
  }
  // E6, F1: either the cancel counts (its record is in the journal and the one marker says
  // cancelled) or it changed nothing; the marker agrees with the journal either way.
  const marker = cancelled.cancelled
    ? ({ kind: 'marker', type: 'cancelled', runId: run.runId } as const)
    : waiting();
  show(turn1(marker));
  model.track({
    sessionId: model.id,
    runId: run.runId,
    marker: marker.type,
    agreesWithJournal: true,
  });
  await loadsAgree(world, model, `E6: ${label}: after the fenced run's cancel`);
  await expectJournal(
    world,
    world.store,
    model.id,
    run.runId,
    journal,
    cancelled.cancelled ? 'interrupted-by-user' : 'interrupted-by-crash',
    `E6: ${label}`,
  );
}
