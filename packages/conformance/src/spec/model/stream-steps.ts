import { MARKER_WORDING, type RunHandle } from '@keepsake/core';
import { expect } from 'vitest';
import type { ExpectedMessage } from './expected-messages.js';
import type { FaultPoint, StreamPlan } from './program.js';
import type { SessionModel } from './session-model.js';
import { expectLive } from './session-steps.js';
import { faultable } from './step-checks.js';
import type { ModelWorld } from './world.js';

/** The error a failing stream reports (its marker carries the text, F1). */
const FAILURE = 'the model failed';

/**
 * E1, E2, E5, E6: one streamed turn. beginRun, then each token appended after a few
 * scheduling points (other sessions' streams, saves and evictions run in between), then
 * complete, cancel, fail, or abandon (left live for the next restart to recover, F1).
 * The turn the run writes must hold exactly the tokens whose append resolved, in order,
 * and the attachments given to beginRun.
 */
export async function runStreamStep(
  world: ModelWorld,
  model: SessionModel,
  plan: StreamPlan,
  label: string,
): Promise<void> {
  if (!model.exists) return;
  const { store } = world;
  const id = model.id;
  const fault = plan.fault;
  const faultAt = (at: 'begin' | 'end' | number): FaultPoint | undefined =>
    fault !== undefined && fault.at === at ? fault.point : undefined;
  const attachments = plan.attachments.map((name) => ({ name, mimeType: 'image/png' }));
  const run: RunHandle = await faultable(world, model, faultAt('begin'), `${label}: beginRun`, () =>
    store.beginRun(id, {
      userMessage: { role: 'user', content: plan.question },
      attachments: attachments.map((attachment) => ({ ...attachment })),
    }),
  );
  // E1: beginRun wrote the live session with its pending turn (and any unsaved edits).
  model.acknowledgeWorking();
  const acknowledgedTokens: string[] = [];
  for (const [index, token] of plan.tokens.entries()) {
    for (let pause = 0; pause < token.pauses; pause++)
      await world.gate(`${label}: before token ${index}`);
    if (token.thinkMs > 0) await think(token.thinkMs);
    await faultable(
      world,
      model,
      faultAt(index),
      `${label}: append token ${index} ${JSON.stringify(token.text)}`,
      () => run.append({ type: 'token', data: { text: token.text } }),
    );
    acknowledgedTokens.push(token.text);
  }
  const question: ExpectedMessage = {
    kind: 'question',
    content: plan.question,
    attachments: plan.attachments,
    recovered: false,
  };
  const answer = acknowledgedTokens.join('');
  switch (plan.end) {
    case 'complete': {
      const session = await faultable(world, model, faultAt('end'), `${label}: complete`, () =>
        run.complete(),
      );
      model.working.push(question);
      if (acknowledgedTokens.length > 0) {
        model.working.push({ kind: 'answer', content: answer, partial: false, recovered: false });
      }
      model.acknowledgeWorking();
      model.track({ sessionId: id, runId: run.runId, marker: null, agreesWithJournal: true });
      expectLive(
        world,
        model,
        session,
        `${label}: complete() (E5: the stored answer is the streamed tokens)`,
      );
      return;
    }
    case 'cancel':
    case 'fail': {
      const outcome = await faultable(world, model, faultAt('end'), `${label}: ${plan.end}`, () =>
        plan.end === 'cancel' ? run.cancel() : run.fail({ message: FAILURE }),
      );
      expect(outcome, `E6: ${label}: ${plan.end}() ends the run`).toMatchObject({
        cancelled: true,
      });
      model.working.push(question);
      if (acknowledgedTokens.length > 0) {
        model.working.push({ kind: 'answer', content: answer, partial: true, recovered: false });
      }
      const type = plan.end === 'cancel' ? 'cancelled' : 'errored';
      model.working.push({
        kind: 'marker',
        type,
        runId: run.runId,
        ...(plan.end === 'fail' ? { content: `${MARKER_WORDING.errored} ${FAILURE}` } : {}),
      });
      model.acknowledgeWorking();
      model.track({ sessionId: id, runId: run.runId, marker: type, agreesWithJournal: true });
      const session = await world.store.load(id);
      expectLive(
        world,
        model,
        session,
        `${label}: load after ${plan.end} (E6: the partial answer is the streamed tokens)`,
      );
      return;
    }
    case 'abandon':
      model.abandoned = {
        runId: run.runId,
        sessionId: run.sessionId,
        question: plan.question,
        attachments: plan.attachments,
        tokens: acknowledgedTokens,
      };
      world.history.note(`${label}: run ${run.runId} left live until the next restart`);
      return;
  }
}

/** The model thinking: real time passes (see StreamToken.thinkMs), nothing is awaited. */
function think(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
