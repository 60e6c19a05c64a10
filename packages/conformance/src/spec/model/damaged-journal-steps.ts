import { JournalSealedError, type RunTerminalState } from '@keepsake/core';
import { expect } from 'vitest';
import { answeredTurn, type ExpectedTurn, tokensOf } from './expected-turns.js';
import type { DamagedLivePlan } from './race-plans.js';
import {
  atRest,
  beginTurn,
  FAILURE,
  markerOf,
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
  RunEvents,
} from './run-checks.js';
import type { SessionModel } from './session-model.js';
import { attempt, mustResolve } from './step-checks.js';
import type { ModelWorld } from './world.js';

/**
 * E2, E3: a damaged record planted in the middle of a live run's journal hides nothing:
 * reads skip it and report it in `invalidRecords`, `runSummary` gives the last sequence
 * stored and the last intact record, the run's next append goes after the last sequence
 * stored, and the run completes (and seals) or is cancelled or failed with every intact
 * acknowledged token in its answer.
 */
export async function runDamagedLive(
  world: ModelWorld,
  model: SessionModel,
  plan: DamagedLivePlan,
  label: string,
): Promise<void> {
  if (!atRest(world, model, label)) return;
  const { store } = world;
  const prefix = [...model.working];
  const toolCallsBefore = model.toolCalls;
  const run = await beginTurn(world, store, model, plan.question, [], label);
  const source = new RunEvents(run.runId, world.env.id('ev'));
  await appendEvents(world, run, source, tokensOf(plan.before), `${label}: before`);
  const reusedEventId = source.tokenEventIds[0];
  const records: Planted[] = [
    {
      kind: 'damaged',
      damage: plan.damage,
      ...(reusedEventId === undefined ? {} : { reusedEventId }),
    },
    ...plantedEvents(source, tokensOf(plan.planted)),
  ];
  const damagedAt = await plant(world, model.id, run.runId, records, label);
  expect(damagedAt, `E2: ${label}: the run's records are numbered 1, 2, 3… without gaps`).toBe(
    plan.before.length + 1,
  );
  const lastStored = damagedAt + plan.planted.length;
  const read = await mustResolve(world, `${label}: readJournal`, () =>
    store.readJournal(model.id, run.runId),
  );
  const intact = [
    ...plan.before.map((_, index) => index + 1),
    ...plan.planted.map((_, index) => damagedAt + 1 + index),
  ];
  world.expectEqual(
    {
      sequences: read.records.map((record) => record.sequence),
      invalid: read.invalidRecords.map((entry) => entry.sequence),
      gaps: read.gaps,
    },
    { sequences: intact, invalid: [damagedAt], gaps: [] },
    `E2, E3: ${label}: a read skips the damaged record, reports it and goes on after it`,
  );
  const lastIntactId = source.tokenEventIds.at(-1) ?? null;
  const summary = await mustResolve(world, `${label}: runSummary`, () =>
    store.runSummary(model.id, run.runId),
  );
  world.expectEqual(
    {
      lastSequence: summary.lastSequence,
      lastEventType: summary.lastEventType,
      lastEventId: summary.lastEventId,
    },
    {
      lastSequence: lastStored,
      lastEventType: lastIntactId === null ? null : 'token',
      lastEventId: lastIntactId,
    },
    `E2: ${label}: runSummary gives the last sequence stored and the last intact record`,
  );
  for (const [index, text] of plan.after.entries()) {
    const input = source.inputs({ type: 'token', text })[0]!;
    const record = await mustResolve(world, `${label}: append token ${JSON.stringify(text)}`, () =>
      run.append(input),
    );
    expect(
      record.sequence,
      `E3: ${label}: the run's next append goes after the last sequence stored`,
    ).toBe(lastStored + 1 + index);
  }
  const events = source.written;
  let turn: ExpectedTurn;
  let terminal: RunTerminalState;
  if (plan.end === 'complete') {
    const session = await mustResolve(world, `${label}: complete()`, () => run.complete());
    turn = answeredTurn(plan.question, events);
    terminal = 'completed';
    setTranscript(model, transcriptOf(prefix, turn));
    world.expectTranscript(
      session,
      model.working,
      `E3: ${label}: complete() keeps every intact acknowledged token`,
    );
    const sealed = await attempt(() => run.append({ type: 'token', data: { text: 'after' } }));
    if (sealed.ok) world.fail(`E2: ${label}: the journal is sealed, yet an append resolved`);
    world.expectTypedRejection(
      (sealed as { error: unknown }).error,
      `E2: ${label}: an append after complete()`,
      [JournalSealedError],
    );
    model.track({ sessionId: model.id, runId: run.runId, marker: null, agreesWithJournal: true });
  } else {
    const outcome = await mustResolve(world, `${label}: ${plan.end}()`, () =>
      plan.end === 'cancel' ? run.cancel() : run.fail({ message: FAILURE }),
    );
    world.expectEqual(
      outcome,
      { cancelled: true, sessionId: model.id, runId: run.runId },
      `E3, E6: ${label}: ${plan.end}() goes through`,
    );
    const type = plan.end === 'cancel' ? 'cancelled' : 'errored';
    terminal = plan.end === 'cancel' ? 'interrupted-by-user' : 'errored';
    turn = {
      ...answeredTurn(plan.question, events),
      partial: true,
      marker: markerOf(type, run.runId),
    };
    setTranscript(model, transcriptOf(prefix, turn));
    model.track({ sessionId: model.id, runId: run.runId, marker: type, agreesWithJournal: true });
  }
  setToolCalls(model, toolCallsBefore, { runId: run.runId, turn });
  await resync(world, model, `E3: ${label}: after the run ended`);
  await expectJournal(world, store, model.id, run.runId, events, terminal, `E3: ${label}`);
}
