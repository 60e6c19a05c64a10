import { isDeepStrictEqual } from 'node:util';
import {
  MARKER_WORDING,
  type MarkerType,
  type RunHandle,
  type Session,
  type SessionStore,
} from '@keepsake/core';
import type { ExpectedMarker, ExpectedMessage } from './expected-messages.js';
import { type ExpectedTurn, toolCallsOf, turnMessages } from './expected-turns.js';
import type { SessionModel } from './session-model.js';
import { expectLive } from './session-steps.js';
import { describeError, mustResolve, type Outcome } from './step-checks.js';
import { type ModelWorld, PAST_GRACE_MS } from './world.js';

/**
 * What the issue-15 steps share: preconditions, the expected markers, resyncing the primary
 * with what another instance wrote, moving the clock past the grace period.
 */

/** The error a run of these steps fails with; its marker carries the text (F1). */
export const FAILURE = 'the tool crashed';

/**
 * The marker of `type` ending run `runId` (F1: a failed run's marker says what failed,
 * exactly as `run.fail()` writes it).
 */
export function markerOf(type: MarkerType, runId: string): ExpectedMarker {
  return type === 'errored'
    ? { kind: 'marker', type, runId, content: `${MARKER_WORDING.errored} ${FAILURE}` }
    : { kind: 'marker', type, runId };
}

/** The call was refused with `errorClass` (a typed error), as the contract says. */
export function expectRefused(
  world: ModelWorld,
  outcome: Outcome<unknown>,
  errorClass: { isInstance(error: unknown): boolean; name: string },
  label: string,
): void {
  if (outcome.ok) {
    world.history.note(`${label} → resolved`);
    world.fail(`${label} resolved, but the contract says it is refused with ${errorClass.name}`);
  }
  const { error } = outcome as { error: unknown };
  world.history.note(`${label} → refused: ${describeError(error)}`);
  world.expectTypedRejection(error, label, [errorClass]);
}

/**
 * Whether the slot is at rest, as an issue-15 step needs it: no object held, nothing unsaved,
 * no run left live. Another instance is about to write the session, and this store picks that
 * up with `load(id, { refresh: true })`, which refreshes only a session without unsaved edits.
 */
export function atRest(world: ModelWorld, model: SessionModel, label: string): boolean {
  const rested =
    model.exists &&
    model.held === null &&
    model.abandoned === null &&
    isDeepStrictEqual(model.working, model.acknowledged);
  if (!rested) world.history.note(`${label}: skipped (the slot is not at rest)`);
  return rested;
}

/** The model's transcript is now `messages`, as stored. */
export function setTranscript(model: SessionModel, messages: readonly ExpectedMessage[]): void {
  model.working = [...messages];
  model.acknowledgeWorking();
}

/** `prefix`, then each turn's messages. */
export function transcriptOf(
  prefix: readonly ExpectedMessage[],
  ...turns: readonly ExpectedTurn[]
): ExpectedMessage[] {
  return [...prefix, ...turns.flatMap(turnMessages)];
}

/** The model's tool calls: those before the step, then each turn's, scoped by run. */
export function setToolCalls(
  model: SessionModel,
  before: SessionModel['toolCalls'],
  ...turns: ReadonlyArray<{ runId: string; turn: ExpectedTurn }>
): void {
  model.toolCalls = [
    ...before,
    ...turns.flatMap(({ runId, turn }) => toolCallsOf(runId, turn.events)),
  ];
}

/**
 * The primary store picks up what the other instance wrote (`load` with `refresh`, as a
 * server with two instances does) and must show the model's transcript. A load may finish a
 * repair or fold late output (F1, F2): that is part of what is checked.
 */
export async function resync(
  world: ModelWorld,
  model: SessionModel,
  label: string,
): Promise<Session> {
  const session = await mustResolve(world, `${label}: load(${model.id}, { refresh: true })`, () =>
    world.store.load(model.id, { refresh: true }),
  );
  expectLive(world, model, session, label);
  return session;
}

/** The other instance's view of the session (refreshed), which must be the model's too (F3, F4). */
export async function otherSees(
  world: ModelWorld,
  model: SessionModel,
  label: string,
): Promise<Session> {
  const other = await world.other();
  const session = await mustResolve(
    world,
    `${label}: other.load(${model.id}, { refresh: true })`,
    () => other.load(model.id, { refresh: true }),
  );
  world.expectTranscript(session, model.working, `${label}: the other instance's transcript`);
  world.expectToolCalls(session, model, `${label}: the other instance's tool calls`);
  return session;
}

/** F4: loading again, from both instances, changes nothing and duplicates nothing. */
export async function loadsAgree(
  world: ModelWorld,
  model: SessionModel,
  label: string,
): Promise<void> {
  await resync(world, model, `${label} (F4: a load again)`);
  await otherSees(world, model, `${label} (F4: a load again)`);
  await resync(world, model, `${label} (F4: and again)`);
}

export async function beginTurn(
  world: ModelWorld,
  store: SessionStore,
  model: SessionModel,
  question: string,
  attachments: readonly string[],
  label: string,
): Promise<RunHandle> {
  const run = await mustResolve(world, `${label}: beginRun(${JSON.stringify(question)})`, () =>
    store.beginRun(model.id, {
      userMessage: { role: 'user', content: question },
      attachments: attachments.map((name) => ({ name, mimeType: 'image/png' })),
    }),
  );
  world.history.note(`${label}: run ${run.runId} started`);
  return run;
}

/** F1: the grace period passes on the manual clock (no checkpoint of a run of this world fires). */
export async function passGrace(world: ModelWorld, label: string): Promise<void> {
  world.history.note(`${label}: the clock moves past the grace period`);
  await world.advanceClock(PAST_GRACE_MS);
}
