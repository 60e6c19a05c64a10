/**
 * E8: a run can be found by its id alone. Found outside the suite: a server that held only
 * a run id (an SSE URL) had no way to learn the run's session, so it could not resume it.
 */
import { InvalidIdError } from '@keepsake/core';
import { expect } from 'vitest';
import { expectTypedError, userInput } from '../harness/fixtures.js';
import type { SpecRegistrar } from '../harness/suite.js';

export function defineRunLookupTests(suite: SpecRegistrar): void {
  suite.test(
    'E8',
    'findRun(runId) from another instance gives the run’s session, journal state and last event; unknown ids give null',
    async (env) => {
      const owner = await env.openStore();
      const session = await owner.store.create({ id: env.id() }, { fsync: true });
      const run = await owner.store.beginRun(session.id, { userMessage: userInput('q') });
      const other = await env.openStore();
      expect(await other.store.findRun(run.runId)).toMatchObject({
        sessionId: session.id,
        runId: run.runId,
        terminalState: null,
      });
      await run.append({ type: 'token', eventId: 'evt-1', data: { text: 'partial' } });
      expect(await other.store.findRun(run.runId)).toMatchObject({
        sessionId: session.id,
        exists: true,
        lastSequence: 1,
        lastEventType: 'token',
        lastEventId: 'evt-1',
      });
      await run.complete();
      const restarted = await env.openStore();
      expect(await restarted.store.findRun(run.runId)).toMatchObject({
        sessionId: session.id,
        terminalState: 'completed',
        lastEventType: 'done',
      });
      expect(await restarted.store.findRun(env.id('no-such-run'))).toBeNull();
      await expectTypedError(restarted.store.findRun('not a run id'), InvalidIdError);
    },
  );

  suite.test(
    'E8',
    'findRun follows a live run through a rename (D2) and finds nothing once its session is deleted (B8)',
    async (env) => {
      const { store } = await env.openStore();
      const session = await store.create({ id: env.id() }, { fsync: true });
      const run = await store.beginRun(session.id, { userMessage: userInput('q') });
      await run.append({ type: 'token', data: { text: 'a' } });
      const renamed = env.id('renamed');
      await store.rename(session.id, renamed);
      const reader = await env.openStore();
      expect(await reader.store.findRun(run.runId)).toMatchObject({
        sessionId: renamed,
        lastSequence: 1,
      });
      await run.complete();
      expect(await store.delete(renamed)).toBe(true);
      expect(await reader.store.findRun(run.runId)).toBeNull();
      const raw = await env.rawAdapter();
      expect(await raw.getDocument('runs', run.runId), 'B8: nothing of the run stays').toBeNull();
    },
  );

  suite.test(
    'E8',
    'a run id reused in another session names the latest run; deleting the first session keeps it',
    async (env) => {
      const { store } = await env.openStore();
      const first = await store.create({ id: env.id() }, { fsync: true });
      const second = await store.create({ id: env.id() }, { fsync: true });
      const runId = env.id('reused');
      const early = await store.beginRun(first.id, { userMessage: userInput('1'), runId });
      await early.append({ type: 'token', data: { text: 'one' } });
      await early.complete();
      const late = await store.beginRun(second.id, { userMessage: userInput('2'), runId });
      expect(await store.findRun(runId)).toMatchObject({ sessionId: second.id });
      await late.cancel();
      expect(await store.delete(first.id)).toBe(true);
      expect(await store.findRun(runId)).toMatchObject({ sessionId: second.id });
    },
  );

  suite.test(
    'E8',
    'a run location that does not parse is quarantined with a warning (A2) and the lookup says null; the run itself is untouched',
    async (env) => {
      const { store } = await env.openStore();
      const session = await store.create({ id: env.id() }, { fsync: true });
      const run = await store.beginRun(session.id, { userMessage: userInput('q') });
      await run.append({ type: 'token', data: { text: 'kept' } });
      const raw = await env.rawAdapter();
      const stored = await raw.getDocument('runs', run.runId);
      expect(stored, 'beginRun recorded the location').not.toBeNull();
      const damaged = await raw.putDocument(
        'runs',
        run.runId,
        { kind: 'full', revision: stored!.revision + 1, text: '{"format":"keepsake-run-loc' },
        { expectedRevision: stored!.revision, durable: true },
      );
      expect(damaged.ok).toBe(true);
      const reader = await env.openStore();
      const warnings: string[] = [];
      reader.store.on((event) => {
        if (event.type === 'warning') warnings.push(event.message);
      });
      expect(await reader.store.findRun(run.runId)).toBeNull();
      expect(warnings.some((message) => message.includes(run.runId))).toBe(true);
      const quarantined = (await raw.listQuarantined()).filter(
        (entry) => entry.collection === 'runs' && entry.id === run.runId,
      );
      expect(quarantined, 'moved aside, never deleted').toHaveLength(1);
      expect(await raw.getDocument('runs', run.runId)).toBeNull();
      await run.complete();
      expect((await reader.store.readJournal(session.id, run.runId)).records).toHaveLength(2);
    },
  );
}
