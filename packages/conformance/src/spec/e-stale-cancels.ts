import { expect } from 'vitest';
import { deferred, userInput } from '../harness/fixtures.js';
import { markersOf, PAST_GRACE_MS, QUIET_WORKER } from '../harness/quiet-worker.js';
import type { SpecRegistrar } from '../harness/suite.js';

const WORKER = QUIET_WORKER;

export function defineStaleCancelTests(suite: SpecRegistrar): void {
  suite.test(
    'D4',
    "a stale handle's cancel after another instance cancelled its run writes nothing and says already-finished (E2: one cancel record)",
    async (env) => {
      const owner = await env.openStore(WORKER);
      const session = await owner.store.create({ id: env.id() }, { fsync: true });
      const run = await owner.store.beginRun(session.id, { userMessage: userInput('q') });
      await run.append({ type: 'token', data: { text: 'partial' } });
      const other = await env.openStore();
      expect(await other.store.cancelRun(session.id)).toMatchObject({ cancelled: true });
      const before = await other.store.readJournal(session.id, run.runId);
      expect(await run.cancel()).toEqual({ cancelled: false, reason: 'already-finished' });
      expect(run.active).toBe(false);
      const after = await other.store.readJournal(session.id, run.runId);
      expect(after.lastSequence, 'nothing written').toBe(before.lastSequence);
      expect(after.records.filter((record) => record.type === 'cancel')).toHaveLength(1);
      const stored = await (await env.openStore()).store.load(session.id);
      expect(markersOf(stored).map((message) => message.marker!.type)).toEqual(['cancelled']);
      // Its failure changes nothing either: the cancel that came first stands.
      expect(await run.fail({ message: 'late failure' })).toMatchObject({ cancelled: false });
      expect((await other.store.readJournal(session.id, run.runId)).lastSequence).toBe(
        before.lastSequence,
      );
    },
  );

  suite.test(
    'E6',
    'a cancel asked for while the turn was pending decides it, even when a cold instance repaired the turn while the cancel waited for its lock: one cancel marker and a cancel record',
    async (env) => {
      const owner = await env.openStore(WORKER);
      const session = await owner.store.create({ id: env.id() }, { fsync: true });
      const run = await owner.store.beginRun(session.id, { userMessage: userInput('q') });
      await run.append({ type: 'token', data: { text: 'kept' } });
      await env.clock.advance(PAST_GRACE_MS);
      const canceller = await env.openStore();
      await canceller.store.load(session.id, { refresh: true });
      // The canceller's lock is busy (another request of its own), so the cancel waits.
      const busy = deferred();
      const holding = canceller.store.withLock(session.id, () => busy.promise);
      const cancelling = canceller.store.cancelRun(session.id);
      // Meanwhile a cold instance loads the session past the grace period and repairs it.
      const cold = await env.openStore();
      const repaired = await cold.store.load(session.id);
      expect(markersOf(repaired).map((message) => message.marker!.type)).toEqual(['interrupted']);
      busy.resolve();
      await holding;
      expect(await cancelling).toEqual({
        cancelled: true,
        sessionId: session.id,
        runId: run.runId,
      });
      const stored = await (await env.openStore()).store.load(session.id);
      expect(markersOf(stored).map((message) => message.marker!.type)).toEqual(['cancelled']);
      expect(stored.messages.map((message) => message.content)).toContain('kept');
      const journal = await cold.store.runSummary(session.id, run.runId);
      expect(journal).toMatchObject({
        terminalState: 'interrupted-by-user',
        lastEventType: 'cancel',
      });
    },
  );

  suite.test(
    'E6',
    'a cancel asked for after a repair had ended the turn reports that and changes nothing: the marker says interrupted',
    async (env) => {
      const owner = await env.openStore(WORKER);
      const session = await owner.store.create({ id: env.id() }, { fsync: true });
      const run = await owner.store.beginRun(session.id, { userMessage: userInput('q') });
      await run.append({ type: 'token', data: { text: 'kept' } });
      await env.clock.advance(PAST_GRACE_MS);
      const cold = await env.openStore();
      await cold.store.load(session.id);
      await env.clock.advance(1_000);
      const canceller = await env.openStore();
      expect(await canceller.store.cancelRun(session.id)).toEqual({
        cancelled: false,
        reason: 'no-pending-turn',
      });
      const stored = await (await env.openStore()).store.load(session.id);
      expect(markersOf(stored).map((message) => message.marker!.type)).toEqual(['interrupted']);
      expect((await cold.store.runSummary(session.id, run.runId)).terminalState).toBe(
        'interrupted-by-crash',
      );
    },
  );
}
