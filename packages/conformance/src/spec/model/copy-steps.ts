import {
  InvalidInputError,
  RevisionConflictError,
  type Session,
  ShrinkRefusedError,
  SummaryOnlyError,
} from '@keepsake/core';
import { expect } from 'vitest';
import { textMessage } from '../../harness/fixtures.js';
import type { FaultPoint, SessionStep } from './program.js';
import type { SessionModel } from './session-model.js';
import { loadAndCheck } from './session-steps.js';
import { faultable, mustRefuse, mustResolve } from './step-checks.js';
import type { ModelWorld } from './world.js';

type CopyStep = Extract<SessionStep, { kind: 'copy' }>;

/**
 * B4, B5, C4: the application saves a copy instead of the live object. A copy at the
 * live revision that keeps every stored message is accepted and becomes the live session;
 * every other copy is refused, and a refused save leaves both the stored document and the
 * live session exactly as they were (the live object is not replaced by the copy).
 */
export async function runCopyStep(
  world: ModelWorld,
  model: SessionModel,
  step: CopyStep,
  fault: FaultPoint | undefined,
  label: string,
): Promise<void> {
  if (!model.exists) return;
  const { store, env } = world;
  const live = model.held ?? (await loadAndCheck(world, model, `${label}: load`));
  model.held = live;
  const id = model.id;
  switch (step.copy) {
    case 'spread-append':
    case 'clone-append': {
      const message = textMessage(env, 'user', step.text);
      // Made at the first attempt (after any check that loads, since a load may finish a
      // repair and write: a copy made before that would be stale), then saved again as it
      // is on the retry.
      let copy: Session | null = null;
      const saveCopy = () => {
        if (copy === null) {
          const base = step.copy === 'spread-append' ? { ...live } : structuredClone(live);
          copy = { ...base, messages: [...base.messages, message] } as Session;
        }
        return store.save(copy, { fsync: step.fsync });
      };
      const saved = await faultable(world, model, fault, label, saveCopy);
      expect(saved === copy, `${label}: save() returns the copy it stored`).toBe(true);
      // The copy is the live session now; the old object is an older revision.
      model.rememberRevision(live);
      model.held = copy;
      model.working.push({ kind: 'text', id: message.id, role: 'user', content: step.text });
      model.acknowledgeWorking();
      const again = await mustResolve(world, `${label}: load after`, () => store.load(id));
      expect(
        again === copy,
        `C4: ${label}: load() returns the copy that became the live session`,
      ).toBe(true);
      return;
    }
    // The refused copies are made inside the call, after the check that loads (a load may
    // finish a repair and write; a copy made before would be refused as stale instead).
    case 'spread-shrink': {
      if (model.acknowledged.length === 0) return;
      const shrunkCopy = () =>
        ({
          ...live,
          title: `${live.title}(refused copy)`,
          messages: live.messages.slice(1),
          // A stale pending turn, an hour old: crash repair would write it if it became live.
          pending: {
            streamId: env.id('ghost'),
            userMessage: textMessage(env, 'user', 'ghost'),
            attachments: [],
            startedAt: env.clock.now() - 3_600_000,
          },
        }) as Session;
      await mustRefuse(world, model, label, [ShrinkRefusedError, InvalidInputError], () =>
        store.save(shrunkCopy(), { fsync: step.fsync }),
      );
      return;
    }
    case 'summary-spread': {
      if (model.acknowledged.length === 0) return;
      await mustRefuse(world, model, label, [ShrinkRefusedError, SummaryOnlyError], async () => {
        const view = await store.load(id, { summaryOnly: true });
        return store.save({ ...view, pending: null } as Session, { fsync: step.fsync });
      });
      return;
    }
    case 'summary-view': {
      await mustRefuse(world, model, label, [SummaryOnlyError], async () => {
        const view = await store.load(id, { summaryOnly: true });
        return store.save(view, { fsync: step.fsync });
      });
      return;
    }
    case 'stale-append': {
      const stale = model.staleCopies.find((candidate) => candidate.revision !== live.revision);
      if (stale === undefined) return;
      const copy = structuredClone(stale);
      copy.messages.push(textMessage(env, 'user', step.text));
      await mustRefuse(
        world,
        model,
        `${label} (revision ${copy.revision}, live ${live.revision})`,
        [RevisionConflictError],
        () => store.save(copy, { fsync: step.fsync }),
      );
      return;
    }
  }
}
