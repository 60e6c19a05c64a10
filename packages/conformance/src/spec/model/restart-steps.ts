import { NotFoundError, type Session } from '@keepsake/core';
import { expect } from 'vitest';
import { textMessage } from '../../harness/fixtures.js';
import type { BackendFaultTarget } from '../../types.js';
import type { Interlude } from './program.js';
import { verifyRuns } from './run-checks.js';
import type { SessionModel } from './session-model.js';
import { attempt, describeError, mustResolve, underFault } from './step-checks.js';
import { type ModelWorld, PAST_GRACE_MS } from './world.js';

/**
 * What happens between rounds (no task running): nothing, a flushAll, a graceful restart
 * (close, then a new store on the same namespace) or a process death (the store's adapter
 * is severed, then a new store). After each, what is stored is checked against the model.
 */
export async function runInterlude(world: ModelWorld, interlude: Interlude): Promise<void> {
  switch (interlude) {
    case 'none':
      await verifyStored(world);
      return;
    case 'flush': {
      const report = await mustResolve(world, 'flushAll()', () => world.store.flushAll());
      // C1: no fault is armed between rounds, so nothing may fail.
      expect(report.failed, 'C1: flushAll() reports no failure when no fault was injected').toEqual(
        [],
      );
      for (const model of world.slots) if (model.exists) model.acknowledgeWorking();
      await verifyStored(world);
      return;
    }
    case 'close': {
      const opened = world.opened;
      const report = await mustResolve(world, 'close()', () => opened.store.close());
      expect(
        report.flush.failed,
        'C1, C2: close() reports no failed flush when no fault was injected',
      ).toEqual([]);
      await world.env.closeStore(opened);
      // The other instance restarts too (its next use opens it afresh).
      await world.closeOther();
      for (const model of world.slots) model.closed();
      await reopen(world);
      return;
    }
    case 'indexFault':
    case 'documentFault':
      await writeSpareUnderBackendFault(world, interlude === 'indexFault' ? 'index' : 'documents');
      await verifyStored(world);
      return;
    case 'kill': {
      // What the dead process leaves is what it stored: read it, then let the process die.
      await verifyStored(world);
      const opened = world.opened;
      world.history.note('the process dies (its adapter is severed; what it wrote stays)');
      world.env.killProcess(opened);
      // The dead process's adapter lets go of what it holds, as the OS does for a dead
      // process: what it already wrote (a group-commit log included) is on disk for the next.
      await opened.adapter.inner.close().catch(() => undefined);
      await world.closeOther();
      for (const model of world.slots) model.killed();
      await reopen(world);
      return;
    }
  }
}

/**
 * B2, B3, B7: one durable write (a create, then appends) of the spare slot while the
 * backend fails once inside. It succeeds, or is refused with a typed error having changed
 * nothing and succeeds on retry; no rejection goes unhandled (issue 14, defect 4: an index
 * error after the document landed made create fail, left an unhandled rejection, hid the
 * session from list() and refused the retry).
 */
async function writeSpareUnderBackendFault(
  world: ModelWorld,
  target: BackendFaultTarget,
): Promise<void> {
  const model = world.spare;
  const arm = () => world.env.injectBackendFault(target);
  const label = `spare slot (${model.id}): durable write with a backend fault on its ${target}`;
  const message = textMessage(world.env, 'user', `under ${target} fault`);
  if (!model.exists) {
    await underFault(world, model, arm, `${label}: create`, () =>
      world.store.create({ id: model.id, messages: [{ ...message }] }, { fsync: true }),
    );
    model.exists = true;
  } else {
    const session = await mustResolve(world, `${label}: load`, () => world.store.load(model.id));
    session.messages.push(message);
    await underFault(world, model, arm, `${label}: save`, () =>
      world.store.save(session, { fsync: true }),
    );
  }
  model.working.push({
    kind: 'text',
    id: message.id,
    role: 'user',
    content: message.content as string,
  });
  model.acknowledgeWorking();
}

/** A new store, a cold cache: every run left live is past its grace period (F1), then everything is checked (C3). */
async function reopen(world: ModelWorld): Promise<void> {
  await world.open();
  world.history.note('a new store opened on the same namespace');
  if (world.slots.some((model) => model.abandoned !== null)) {
    await world.advanceClock(PAST_GRACE_MS);
    for (const model of world.slots) model.recoverAbandonedRun();
  }
  await verifyFreshStore(world);
}

/**
 * C3, B7, D2, F1: a fresh store sees every session as the model says, every rotated
 * parent as it was left, and lists exactly the sessions that exist.
 */
async function verifyFreshStore(world: ModelWorld): Promise<void> {
  const { store } = world;
  for (const model of world.slots) {
    if (!model.exists) {
      const outcome = await attempt(() => store.load(model.id));
      expect(
        !outcome.ok && NotFoundError.isInstance(outcome.error),
        `after the restart, load(${model.id}) of a deleted or never created session is NotFoundError, got ${outcome.ok ? 'a session' : describeError(outcome.error)}`,
      ).toBe(true);
      continue;
    }
    const session = await mustResolve(world, `after the restart: load(${model.id})`, () =>
      store.load(model.id),
    );
    world.expectTranscript(
      session,
      model.working,
      `C3: after the restart, ${model.id} holds what was acknowledged`,
    );
    expect(
      session.pending,
      `F1: after the restart, ${model.id} has no pending turn left`,
    ).toBeNull();
    world.expectToolCalls(session, model, `C3: after the restart, the tool calls of ${model.id}`);
    await verifyRuns(world, model);
  }
  for (const model of world.slots) {
    for (const parent of model.parents) {
      const session = await mustResolve(world, `after the restart: load(${parent.id})`, () =>
        store.load(parent.id),
      );
      world.expectTranscript(
        session,
        parent.messages,
        `D2: the rotated parent ${parent.id} keeps its transcript`,
      );
      expect(session.rotatedTo, `D2: ${parent.id} names the id it was rotated to`).toBe(
        parent.rotatedTo,
      );
    }
  }
  await verifyListed(world);
}

/** B7: list() shows exactly the sessions that exist (rotated parents hidden), with their stored message counts. */
async function verifyListed(world: ModelWorld): Promise<void> {
  const page = await mustResolve(world, 'list()', () => world.store.list({ limit: 1000 }));
  const ours = new Set(world.slots.flatMap((model) => model.names));
  const listed = page.sessions
    .filter((summary) => ours.has(summary.id))
    .map((summary) => [summary.id, summary.messageCount] as const)
    .sort();
  const expected = world.slots
    .filter((model) => model.exists)
    .map((model) => [model.id, model.acknowledged.length] as const)
    .sort();
  world.expectEqual(
    listed,
    expected,
    'B7: list() shows every session that exists, with its message count',
  );
}

/**
 * Between rounds, without a restart: what storage holds (read by another adapter) is what
 * the model says was acknowledged. Nothing acknowledged is lost, nothing refused landed.
 * The store's own writes (a checkpoint, a crash repair finished by a load) store the live
 * session as it is, so edits the application pushed without saving may be stored too: a
 * stored transcript is accepted from what was acknowledged up to the whole live one, and
 * the model learns which it was.
 */
export async function verifyStored(world: ModelWorld): Promise<void> {
  for (const model of world.slots) {
    const persisted = await world.stored(model.id);
    if (!model.exists) {
      expect(persisted, `B8: nothing is stored under ${model.id}`).toBeNull();
      continue;
    }
    if (persisted === null) return world.fail(`${model.id} exists, but nothing is stored under it`);
    observeStored(world, model, persisted.session.messages.length, persisted.session);
    expect(
      persisted.session.pending !== null,
      `E1: ${model.id} has a pending turn stored exactly while a run is live`,
    ).toBe(model.abandoned !== null);
    world.expectToolCalls(
      persisted.session,
      model,
      `what is stored for ${model.id}: its tool calls`,
    );
    await verifyRuns(world, model);
    for (const parent of model.parents) {
      const stored = await world.stored(parent.id);
      if (stored === null) return world.fail(`D2: the rotated parent ${parent.id} is gone`);
      world.expectTranscript(
        stored.session,
        parent.messages,
        `D2: what is stored for the rotated parent ${parent.id}`,
      );
    }
  }
  await verifyListed(world);
}

function observeStored(
  world: ModelWorld,
  model: SessionModel,
  count: number,
  stored: Pick<Session, 'messages'>,
): void {
  const what = `what is stored for ${model.id} is what was acknowledged (plus, at most, edits not saved yet)`;
  if (count < model.acknowledged.length || count > model.working.length) {
    world.expectTranscript(stored, model.acknowledged, what);
  }
  world.expectTranscript(stored, model.working.slice(0, count), what);
  model.acknowledged = model.working.slice(0, count);
}
