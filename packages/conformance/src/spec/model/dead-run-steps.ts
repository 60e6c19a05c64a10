import type { MarkerType, RunTerminalState, Session } from '@keepsake/core';
import { expect } from 'vitest';
import type { ExpectedMarker } from './expected-messages.js';
import { answeredTurn, type ExpectedTurn, hasOutput, tokensOf } from './expected-turns.js';
import type { DeadRunPlan, RunEvent } from './race-plans.js';
import {
  atRest,
  beginTurn,
  FAILURE,
  loadsAgree,
  markerOf,
  passGrace,
  resync,
  setToolCalls,
  setTranscript,
  transcriptOf,
} from './race-support.js';
import {
  appendEvents,
  expectJournal,
  type Planted,
  plant,
  plantedEvents,
  plantedTerminal,
  RunEvents,
} from './run-checks.js';
import type { SessionModel } from './session-model.js';
import { mustResolve } from './step-checks.js';
import type { ModelWorld } from './world.js';

/**
 * F1, F2, F4, D4, E2: a run whose worker died, its journal as the plan plants it, repaired
 * past the grace period by one instance: the question (recovered), what the journal holds,
 * and one marker that agrees with it (a damaged or foreign journal: the generic interrupted
 * marker and a warning). A run that died before its first record gets a pending-retry
 * marker, neutral after another grace period and still watched. Output planted after the
 * repair is folded in by a later load while the turn is the last one answered; never once a
 * later turn was answered (it stays in the journal).
 */
export async function runDeadRun(
  world: ModelWorld,
  model: SessionModel,
  plan: DeadRunPlan,
  label: string,
): Promise<void> {
  if (!atRest(world, model, label)) return;
  const prefix = [...model.working];
  const toolCallsBefore = model.toolCalls;
  const earlier: Array<{ runId: string; turn: ExpectedTurn }> = [];
  const { journal } = plan;

  // F1: a foreign record needs an event id the transcript gives to another run.
  let foreignEventId: string | undefined;
  if (journal.kind === 'foreign') {
    const run0 = await beginTurn(
      world,
      world.store,
      model,
      `${plan.question}?`,
      [],
      `${label}: earlier turn`,
    );
    const source0 = new RunEvents(run0.runId, world.env.id('ev'));
    await appendEvents(world, run0, source0, tokensOf(['earlier']), `${label}: earlier turn`);
    await mustResolve(world, `${label}: earlier turn: complete()`, () => run0.complete());
    foreignEventId = source0.tokenEventIds[0];
    earlier.push({
      runId: run0.runId,
      turn: answeredTurn(`${plan.question}?`, tokensOf(['earlier'])),
    });
    model.track({ sessionId: model.id, runId: run0.runId, marker: null, agreesWithJournal: true });
  }

  const worker = await world.openWorker();
  const run = await beginTurn(
    world,
    worker.store,
    model,
    plan.question,
    plan.attachments,
    `${label}: worker`,
  );
  const source = new RunEvents(run.runId, world.env.id('ev'));
  await appendEvents(world, run, source, plan.events, `${label}: worker`);
  world.history.note(`${label}: the worker process dies`);
  await world.killWorker(worker);

  const folded: RunEvent[] = [...plan.events];
  /** What readJournal shows (a forged record is a valid record of the journal). */
  const journaled: RunEvent[] = [...source.written];
  let planted: Planted[] = [];
  switch (journal.kind) {
    case 'ends':
      planted = [plantedTerminal(source, journal.event, FAILURE)];
      break;
    case 'damaged': {
      const reusedEventId = source.tokenEventIds[0];
      planted = [
        {
          kind: 'damaged',
          damage: journal.damage,
          ...(reusedEventId === undefined ? {} : { reusedEventId }),
        },
        ...plantedEvents(source, tokensOf(journal.planted)),
      ];
      folded.push(...tokensOf(journal.planted));
      journaled.push(...tokensOf(journal.planted));
      break;
    }
    case 'foreign':
      planted = [
        {
          kind: 'event',
          input: {
            type: journal.event,
            data: journal.event === 'token' ? { text: 'forged' } : {},
            eventId: foreignEventId!,
          },
        },
      ];
      if (journal.event === 'token') journaled.push({ type: 'token', text: 'forged' });
      break;
    case 'intact':
      break;
  }
  if (planted.length > 0)
    await plant(world, model.id, run.runId, planted, `${label}: before the repair`);

  await passGrace(world, label);
  const untrusted = journal.kind === 'damaged' || journal.kind === 'foreign';
  const endedAs: MarkerType | null =
    journal.kind === 'ends'
      ? ({ error: 'errored', cancel: 'cancelled', done: null } as const)[journal.event]
      : 'interrupted';
  /** F2: the run has not ended for good and its journal is trusted: it is watched. */
  const watched = !untrusted && (endedAs === 'interrupted' || endedAs === 'errored');
  const markerNow = (settling: boolean): ExpectedMarker | null => {
    if (endedAs === null) return null;
    if (endedAs !== 'interrupted') return markerOf(endedAs, run.runId);
    if (hasOutput(folded)) return { ...markerOf('interrupted', run.runId), wording: ['recovered'] };
    // E2: the generic marker of an untrusted journal says nothing about output to come.
    if (untrusted) return markerOf('interrupted', run.runId);
    return {
      ...markerOf('interrupted', run.runId),
      wording: settling ? ['pending-retry', 'neutral'] : ['pending-retry'],
    };
  };
  let completedLate = false;
  let later: { runId: string; turn: ExpectedTurn } | null = null;
  const turnNow = (marker: ExpectedMarker | null): ExpectedTurn => ({
    question: plan.question,
    attachments: plan.attachments,
    questionRecovered: true,
    events: [...folded],
    partial: completedLate ? 'either' : endedAs !== null,
    recovered: true,
    marker,
  });
  const show = (marker: ExpectedMarker | null) => {
    const turns = [
      ...earlier,
      { runId: run.runId, turn: turnNow(marker) },
      ...(later === null ? [] : [later]),
    ];
    setTranscript(model, transcriptOf(prefix, ...turns.map((entry) => entry.turn)));
    setToolCalls(model, toolCallsBefore, ...turns);
  };

  // F1: one instance finds the run dead and repairs the turn.
  const warningsBefore = world.journalWarnings(model.id);
  const repairer = plan.repairBy === 'primary' ? world.store : await world.other();
  const repaired: Session = await mustResolve(
    world,
    `${label}: ${plan.repairBy}.load (repair)`,
    () => repairer.load(model.id, { refresh: true }),
  );
  const first = markerNow(false);
  show(first === null || !watched ? first : { ...first, watching: true });
  world.expectTranscript(
    repaired,
    model.working,
    `F1: ${label}: the repair by the ${plan.repairBy} instance`,
  );
  world.expectToolCalls(repaired, model, `F1, F4: ${label}: the repair's tool calls`);
  if (untrusted) {
    expect(
      world.journalWarnings(model.id),
      `E2, F1: ${label}: a damaged or foreign journal is reported as a warning event`,
    ).toBeGreaterThan(warningsBefore);
  }
  show(markerNow(true));
  await loadsAgree(world, model, `F1, F4: ${label}: after the repair`);

  if (plan.secondGrace) {
    await passGrace(world, `${label}: a second`);
    const marker = markerNow(true);
    // F2: a run that died before its first record takes the final neutral wording once the
    // grace period passed since its marker was written, and stays watched.
    const turnsNeutral = marker?.wording?.includes('pending-retry') === true;
    show(turnsNeutral ? { ...marker!, wording: ['neutral'], watching: true } : marker);
    await resync(world, model, `F2: ${label}: after a second grace period`);
    show(marker);
  }

  if (plan.late.length > 0 || plan.lateDone) {
    const late: Planted[] = [
      ...plantedEvents(source, plan.late),
      ...(plan.lateDone ? [plantedTerminal(source, 'done')] : []),
    ];
    await plant(world, model.id, run.runId, late, `${label}: late output`);
    folded.push(...plan.late);
    journaled.push(...plan.late);
    completedLate = plan.lateDone;
    // F2: the turn is still the last one answered: a later load folds the output in (a
    // later `done` supersedes an error and ends the turn completed, without its marker).
    const marker = plan.lateDone ? null : markerNow(true);
    show(marker === null ? null : { ...marker, ...(watched ? { watching: true } : {}) });
    await resync(world, model, `F2: ${label}: a load after the late output`);
    show(marker);
    await loadsAgree(world, model, `F2, F4: ${label}: after the late output`);
  }
  const finalMarker = completedLate ? null : markerNow(true);

  if (plan.laterTurn !== null) {
    const run2 = await beginTurn(
      world,
      world.store,
      model,
      plan.laterTurn.question,
      [],
      `${label}: later turn`,
    );
    const source2 = new RunEvents(run2.runId, world.env.id('ev'));
    await appendEvents(world, run2, source2, plan.laterTurn.events, `${label}: later turn`);
    await mustResolve(world, `${label}: later turn: complete()`, () => run2.complete());
    later = {
      runId: run2.runId,
      turn: answeredTurn(plan.laterTurn.question, plan.laterTurn.events),
    };
    model.track({ sessionId: model.id, runId: run2.runId, marker: null, agreesWithJournal: true });
    show(finalMarker);
    await resync(world, model, `${label}: after the later turn`);
    if (plan.lateAfter.length > 0) {
      await plant(
        world,
        model.id,
        run.runId,
        plantedEvents(source, plan.lateAfter),
        `${label}: output after the later turn`,
      );
      journaled.push(...plan.lateAfter);
      // F2, D4: a later turn was answered: the output stays in the journal, never above it.
      await loadsAgree(
        world,
        model,
        `F2, D4: ${label}: output after a later turn is never folded in`,
      );
    }
  }
  model.track({
    sessionId: model.id,
    runId: run.runId,
    marker: finalMarker?.type ?? null,
    agreesWithJournal: !untrusted,
  });
  const terminal: RunTerminalState | null | undefined = untrusted
    ? undefined
    : completedLate || endedAs === null
      ? 'completed'
      : endedAs === 'errored'
        ? 'errored'
        : endedAs === 'cancelled'
          ? 'interrupted-by-user'
          : // F1, D4: the repair sealed the journal with its crash record, creating it
            // when the run had written nothing.
            'interrupted-by-crash';
  await expectJournal(
    world,
    world.store,
    model.id,
    run.runId,
    journaled,
    terminal,
    `F1, F2: ${label}`,
  );
}
