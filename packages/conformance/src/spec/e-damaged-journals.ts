/**
 * E2, E3, F1: a journal with a damaged record in the middle, or with records that are not
 * its own. Found outside the suite: a malformed record hid every record after it (the run
 * could then neither append nor seal), and a record carrying another run's event id (a
 * planted `done`) was trusted, making a dead run look completed.
 */
import type { StoreEvent } from '@keepsake/core';
import { expect } from 'vitest';
import type { TestEnvironment } from '../harness/environment.js';
import { contentsOf, userInput } from '../harness/fixtures.js';
import type { SpecRegistrar } from '../harness/suite.js';

const PAST_GRACE_MS = 31_000;
const WORKER = {
  journal: { durability: 'each' },
  checkpoint: { intervalMs: 3_600_000, idleRefreshMs: 3_600_000 },
} as const;

/** The JSON text of a journal record, as a foreign writer would put it there. */
function recordText(
  sessionId: string,
  runId: string,
  sequence: number,
  fields: { type: string; eventId: string; data?: Record<string, unknown>; at: number },
): string {
  return JSON.stringify({ sessionId, runId, sequence, data: {}, ...fields });
}

async function plantRaw(
  env: TestEnvironment,
  sessionId: string,
  runId: string,
  records: Array<{ sequence: number; text: string }>,
): Promise<void> {
  const raw = await env.rawAdapter();
  expect((await raw.appendLog(sessionId, runId, records, { durability: 'each' })).ok).toBe(true);
}

export function defineDamagedJournalTests(suite: SpecRegistrar): void {
  suite.test(
    'E3',
    'a damaged record in the middle hides nothing: the live run appends after it, completes and seals',
    async (env) => {
      const { store } = await env.openStore(WORKER);
      const session = await store.create({ id: env.id() });
      const run = await store.beginRun(session.id, { userMessage: userInput('go') });
      await run.append({ type: 'token', data: { text: 'one ' } });
      await run.append({ type: 'token', data: { text: 'two ' } });
      await plantRaw(env, session.id, run.runId, [
        { sequence: 3, text: '{"this is": "not a record"' },
        {
          sequence: 4,
          text: recordText(session.id, run.runId, 4, {
            type: 'token',
            eventId: 'planted-4',
            data: { text: 'four ' },
            at: env.clock.now(),
          }),
        },
      ]);
      const read = await store.readJournal(session.id, run.runId);
      expect(read.records.map((record) => record.sequence)).toEqual([1, 2, 4]);
      expect(read.invalidRecords.map((entry) => entry.sequence)).toEqual([3]);
      const summary = await store.runSummary(session.id, run.runId);
      expect(summary.lastSequence).toBe(4);
      expect(summary).toMatchObject({ lastEventType: 'token', lastEventId: 'planted-4' });
      const appended = await run.append({ type: 'token', data: { text: 'five' } });
      expect(appended.sequence).toBe(5);
      await run.complete();
      const reader = await env.openStore();
      expect(contentsOf(await reader.store.load(session.id))).toEqual(['go', 'one two four five']);
      expect((await reader.store.runSummary(session.id, run.runId)).terminalState).toBe(
        'completed',
      );
    },
  );

  suite.test(
    'F1',
    "a planted record with another run's event id is not trusted: no false completion, a warning",
    async (env) => {
      const worker = await env.openStore(WORKER);
      const session = await worker.store.create({ id: env.id() }, { fsync: true });
      const earlier = await worker.store.beginRun(session.id, { userMessage: userInput('first') });
      await earlier.append({ type: 'token', data: { text: 'first answer' }, eventId: 'evt-first' });
      await earlier.complete();
      const dead = await worker.store.beginRun(session.id, { userMessage: userInput('second') });
      await dead.append({ type: 'token', data: { text: 'partial' } });
      await env.crash(worker);
      // A `done` whose event id the transcript gives to the earlier run: copied or forged.
      await plantRaw(env, session.id, dead.runId, [
        {
          sequence: 2,
          text: recordText(session.id, dead.runId, 2, {
            type: 'done',
            eventId: 'evt-first',
            at: env.clock.now(),
          }),
        },
      ]);
      await env.clock.advance(PAST_GRACE_MS);
      const opened = await env.openStore();
      const warnings: StoreEvent[] = [];
      opened.store.on((event) => {
        if (event.type === 'warning') warnings.push(event);
      });
      const loaded = await opened.store.load(session.id);
      expect(contentsOf(loaded)).toContain('partial');
      const marker = loaded.messages.at(-1)!;
      expect(marker.marker, 'the generic interrupted marker, not a completed turn').toMatchObject({
        type: 'interrupted',
        runId: dead.runId,
      });
      expect(warnings.some((event) => event.type === 'warning' && event.field === 'journal')).toBe(
        true,
      );
    },
  );
}
