import { AlreadyExistsError, InvalidInputError, NotFoundError, type Session } from '@keepsake/core';
import { expect } from 'vitest';
import { textMessage } from '../../harness/fixtures.js';
import type { ExpectedMessage } from './expected-messages.js';
import type { FaultPoint, SessionStep } from './program.js';
import type { SessionModel } from './session-model.js';
import { faultable, mustRefuse, mustResolve } from './step-checks.js';
import type { ModelWorld } from './world.js';

/** E4: how far a `tick` moves the clock (the default checkpoint interval). */
const CHECKPOINT_INTERVAL_MS = 5000;

type SessionOnlyStep = Exclude<
  SessionStep,
  {
    kind: 'copy' | 'stream' | 'foreignCancel' | 'fence' | 'repairRace' | 'damagedLive' | 'deadRun';
  }
>;

/**
 * Loads the slot's session and checks it against the model: while the application holds
 * an object, `load` must return that very object (C4), and the live transcript is what
 * the model says (edits included).
 */
export async function loadAndCheck(
  world: ModelWorld,
  model: SessionModel,
  label: string,
): Promise<Session> {
  const session = await mustResolve(world, label, () => world.store.load(model.id));
  expectLive(world, model, session, label);
  return session;
}

/** The object a call returned is the live session: the held one, with the model's transcript. */
export function expectLive(
  world: ModelWorld,
  model: SessionModel,
  session: Session,
  label: string,
): void {
  if (model.held !== null && session !== model.held) {
    world.fail(
      `C4: ${label} returned a different object than the session object the application still holds (edits made to the held object would be lost)`,
    );
  }
  world.expectTranscript(session, model.working, `${label}: the live transcript`);
  world.expectToolCalls(session, model, `${label}: the live session's tool calls`);
}

function written(message: { id: string; content: unknown }): ExpectedMessage {
  return { kind: 'text', id: message.id, role: 'user', content: String(message.content) } as const;
}

export async function runSessionStep(
  world: ModelWorld,
  model: SessionModel,
  step: SessionOnlyStep,
  fault: FaultPoint | undefined,
  label: string,
): Promise<void> {
  const { store } = world;
  const { env } = world;
  const id = model.id;
  switch (step.kind) {
    case 'create': {
      if (model.exists) {
        await mustRefuse(world, model, label, [AlreadyExistsError], () => store.create({ id }));
        return;
      }
      const messages = step.messages.map((text) => textMessage(env, 'user', text));
      const session = await faultable(world, model, fault, label, () =>
        store.create(
          { id, messages: messages.map((message) => ({ ...message })) },
          { fsync: step.fsync },
        ),
      );
      model.exists = true;
      model.deletedObject = null;
      model.working = messages.map((message) => written(message));
      model.acknowledgeWorking();
      world.expectTranscript(session, model.working, `${label}: the created session`);
      model.held = step.hold ? session : null;
      return;
    }
    case 'load': {
      if (!model.exists) {
        await mustRefuse(world, model, label, [NotFoundError], () => store.load(id));
        return;
      }
      const session = await faultable(world, model, fault, label, () => store.load(id), {
        unchanged: false,
      });
      expectLive(world, model, session, label);
      model.held = session;
      model.rememberRevision(session);
      return;
    }
    case 'read': {
      if (!model.exists) {
        await mustRefuse(world, model, label, [NotFoundError], () => store.load(id));
        return;
      }
      const session = await faultable(world, model, fault, label, () => store.load(id), {
        unchanged: false,
      });
      expectLive(world, model, session, label);
      return;
    }
    case 'drop':
      model.held = null;
      world.history.note(`${label}: the application lets go of its object`);
      return;
    case 'edit': {
      if (model.held === null) return;
      const message = textMessage(env, 'user', step.text);
      model.held.messages.push(message);
      model.working.push(written(message));
      world.history.note(`${label}: pushed onto the held object, not saved`);
      return;
    }
    case 'save': {
      const held = model.held;
      if (held === null) return;
      const saved = await faultable(world, model, fault, label, () =>
        store.save(held, { fsync: step.fsync }),
      );
      expect(saved === held, `${label} returns the saved object`).toBe(true);
      model.acknowledgeWorking();
      model.rememberRevision(held);
      return;
    }
    case 'loadEditSave': {
      if (!model.exists) return;
      const session = await loadAndCheck(world, model, `${label}: load`);
      const message = textMessage(env, 'user', step.text);
      session.messages.push(message);
      model.working.push(written(message));
      await faultable(world, model, fault, `${label}: save`, () =>
        store.save(session, { fsync: step.fsync }),
      );
      model.acknowledgeWorking();
      return;
    }
    case 'undo': {
      if (!model.exists || model.working.length === 0) return;
      const session = model.held ?? (await loadAndCheck(world, model, `${label}: load`));
      const count = Math.min(step.count, model.working.length);
      session.messages.splice(-count, count);
      model.working.splice(-count, count);
      model.forgetRuns();
      model.toolCalls = model.toolCalls.map((call) => ({ ...call, hosted: false }));
      await faultable(world, model, fault, `${label}: save({ allowShrink: true })`, () =>
        store.save(session, { allowShrink: true }),
      );
      model.acknowledgeWorking();
      return;
    }
    case 'summary': {
      if (!model.exists) {
        await mustRefuse(world, model, label, [NotFoundError], () =>
          store.load(id, { summaryOnly: true }),
        );
        return;
      }
      const view = await mustResolve(world, label, () => store.load(id, { summaryOnly: true }));
      expect(view.id, `${label}: the summary names the session`).toBe(id);
      expect(view.messages, `${label}: a summary view has no messages`).toEqual([]);
      expect(view === model.held, `${label}: a summary view is not the live object`).toBe(false);
      await loadAndCheck(world, model, `${label}: load after the summary`);
      return;
    }
    case 'rename': {
      const to = model.nextId;
      if (!model.exists || to === null) return;
      const from = id;
      const settled = world.history.renameCalled(from, to, label);
      // A fault on the parent's write comes after the child was written: the retry finishes
      // the rename (D2), so this call is not checked for "changes nothing".
      const child = await faultable(
        world,
        model,
        fault,
        `${label}: rename(${from} → ${to})`,
        () => store.rename(from, to),
        {
          unchanged: false,
        },
      ).catch((error: unknown) => {
        settled(false);
        throw error;
      });
      settled(true);
      expect(child.id, `${label} returns the new session`).toBe(to);
      expect(child.parentId, `D2: ${label}: the new session names its parent`).toBe(from);
      model.rotate();
      model.held = step.hold ? child : null;
      world.expectTranscript(child, model.working, `${label}: the new session`);
      return;
    }
    case 'renameOntoParent': {
      const parent = model.parents.at(-1);
      if (!model.exists || parent === undefined) return;
      const parentBefore = await world.stored(parent.id);
      await mustRefuse(
        world,
        model,
        `${label}: rename(${id} → ${parent.id})`,
        [AlreadyExistsError, InvalidInputError],
        () => store.rename(id, parent.id),
      );
      const parentAfter = await world.stored(parent.id);
      expect(
        parentAfter,
        `${label} was refused, so the parent ${parent.id} is stored as before`,
      ).toEqual(parentBefore);
      return;
    }
    case 'delete': {
      if (!model.exists) {
        const existed = await mustResolve(world, label, () => store.delete(id));
        expect(existed, `${label} of a session that does not exist returns false`).toBe(false);
        return;
      }
      const existed = await faultable(world, model, fault, label, () => store.delete(id));
      expect(existed, `${label} returns true`).toBe(true);
      model.exists = false;
      model.deletedObject = model.held;
      model.held = null;
      model.working = [];
      model.acknowledged = [];
      model.staleCopies = [];
      model.toolCalls = [];
      model.forgetRuns();
      return;
    }
    case 'deleteElsewhere': {
      // B8: another instance deletes the session this store holds cached (a server whose
      // peer handled the delete). A refreshing load must say it is gone and forget the copy,
      // never hand back (or repair) a ghost. Unsaved edits keep the live copy as it is (a
      // refresh never overwrites them), and a live run here is a delete's own business
      // (`delete`): the step is for a clean session.
      const dirty = JSON.stringify(model.working) !== JSON.stringify(model.acknowledged);
      if (!model.exists || model.abandoned !== null || dirty) {
        world.history.note(
          `${label}: nothing to delete elsewhere (absent, dirty or with a live run)`,
        );
        return;
      }
      if (model.held === null) {
        // Cached here, as a request handled moments ago leaves it.
        const cached = await mustResolve(world, label, () => store.load(id));
        expectLive(world, model, cached, label);
      }
      const other = await world.other();
      const existed = await mustResolve(world, label, () => other.delete(id));
      expect(existed, `${label}: the other instance's delete returns true`).toBe(true);
      model.exists = false;
      model.deletedObject = model.held;
      model.held = null;
      model.working = [];
      model.acknowledged = [];
      model.staleCopies = [];
      model.toolCalls = [];
      model.forgetRuns();
      await mustRefuse(world, model, `${label}, then a refreshing load here`, [NotFoundError], () =>
        store.load(id, { refresh: true }),
      );
      await mustRefuse(world, model, `${label}, then a load here`, [NotFoundError], () =>
        store.load(id),
      );
      return;
    }
    case 'saveDeleted': {
      const deleted = model.deletedObject;
      if (deleted === null || model.exists) return;
      // B8: saving an object of a deleted session must not bring it back.
      await mustRefuse(world, model, label, [], () => store.save(deleted));
      return;
    }
    case 'tick':
      await mustResolve(world, label, () => world.advanceClock(CHECKPOINT_INTERVAL_MS));
      return;
    case 'pause':
      await world.gate(label);
      return;
  }
}
