/**
 * E6, E2: a cancel wins against the run's own stream. Found outside the suite: a cancel
 * from another instance lost every race against a run with queued appends and failed with
 * a JournalConflictError whose text made no sense.
 */
import { JournalSealedError, RunNotActiveError, SessionBusyError } from '@keepsake/core';
import { expect } from 'vitest';
import type { OpenedStore } from '../harness/environment.js';
import {
  captureError,
  contentsOf,
  deferred,
  expectTypedError,
  settlesPromptly,
  userInput,
} from '../harness/fixtures.js';
import { holdAdapterCall, holdNextSessionWrite } from '../harness/held-adapter-call.js';
import { markersOf, PAST_GRACE_MS, QUIET_WORKER } from '../harness/quiet-worker.js';
import type { SpecRegistrar } from '../harness/suite.js';

const WORKER = QUIET_WORKER;

/** Holds the next journal append of `opened` whose record is of `type`. */
function holdNextAppendOf(opened: OpenedStore, type: string) {
  return holdAdapterCall(opened.adapter, {
    method: 'appendLog',
    times: 1,
    match: (args) =>
      (args[2] as Array<{ text: string }>).some((record) =>
        record.text.includes(`"type":"${type}"`),
      ),
  });
}

export function defineCancelRaceTests(suite: SpecRegistrar): void {
  suite.test(
    'E6',
    'a cancel from another instance wins against 40 queued appends, and keeps exactly what was acknowledged',
    async (env) => {
      for (let round = 0; round < 5; round++) {
        const streaming = await env.openStore();
        const cancelling = await env.openStore();
        const session = await streaming.store.create({ id: env.id() }, { fsync: true });
        const run = await streaming.store.beginRun(session.id, { userMessage: userInput('go') });
        await run.append({ type: 'token', data: { text: 'first ' } });
        const appends = Array.from({ length: 40 }, (_, index) =>
          run.append({ type: 'token', data: { text: `t${index} ` } }),
        );
        // Handled at once: the appends the cancel seals are refused before it resolves.
        const settling = Promise.allSettled(appends);
        const outcome = await cancelling.store.cancelRun(session.id);
        expect(outcome, `round ${round}`).toMatchObject({ cancelled: true, runId: run.runId });
        const settled = await settling;
        let acknowledged = 'first ';
        for (const [index, result] of settled.entries()) {
          if (result.status === 'fulfilled') {
            acknowledged += `t${index} `;
            continue;
          }
          const refused =
            JournalSealedError.isInstance(result.reason) ||
            RunNotActiveError.isInstance(result.reason);
          expect(refused, `append ${index} is refused as sealed, not failed otherwise`).toBe(true);
        }
        const reader = await env.openStore();
        const stored = await reader.store.load(session.id);
        expect(stored.pending).toBeNull();
        expect(contentsOf(stored).slice(0, 2)).toEqual(['go', acknowledged]);
        expect(stored.messages.filter((message) => message.marker !== undefined)).toHaveLength(1);
        expect(stored.messages.at(-1)!.marker).toMatchObject({ type: 'cancelled' });
        const summary = await reader.store.runSummary(session.id, run.runId);
        expect(summary.terminalState).toBe('interrupted-by-user');
        await streaming.store.close();
        await cancelling.store.close();
      }
    },
  );

  for (const order of ['cancel record first', 'repair first'] as const) {
    suite.test(
      'E6',
      `a cancel racing another instance's crash repair ends with one cancel marker (${order})`,
      async (env) => {
        const owner = await env.openStore(WORKER);
        const session = await owner.store.create({ id: env.id() }, { fsync: true });
        const run = await owner.store.beginRun(session.id, { userMessage: userInput('stop me') });
        await run.append({ type: 'token', data: { text: 'partial' } });
        await env.clock.advance(PAST_GRACE_MS);
        const repairer = await env.openStore(WORKER);
        let cancelling: Promise<unknown>;
        if (order === 'cancel record first') {
          const held = holdNextSessionWrite(owner.adapter, session.id);
          cancelling = run.cancel();
          await held.entered;
          await repairer.store.load(session.id);
          held.release();
        } else {
          const held = holdNextAppendOf(owner, 'cancel');
          cancelling = run.cancel();
          await held.entered;
          await repairer.store.load(session.id);
          held.release();
        }
        expect(await cancelling).toMatchObject({ cancelled: true, runId: run.runId });
        const reader = await env.openStore();
        const stored = await reader.store.load(session.id);
        expect(markersOf(stored).map((message) => message.marker!.type)).toEqual(['cancelled']);
        expect(contentsOf(stored)).toContain('partial');
        expect((await reader.store.runSummary(session.id, run.runId)).terminalState).toBe(
          'interrupted-by-user',
        );
      },
    );
  }

  suite.test(
    'E6',
    'an append that never returns holds a cancel only until the deadline; then a new run is admitted',
    async (env) => {
      const opened = await env.openStore({ ...WORKER, runs: { cancelDeadlineMs: 5_000 } });
      const { store } = opened;
      const session = await store.create({ id: env.id() }, { fsync: true });
      const run = await store.beginRun(session.id, { userMessage: userInput('hang') });
      await run.append({ type: 'token', data: { text: 'before the hang' } });
      const never = deferred();
      opened.adapter.inject({
        method: 'appendLog',
        times: 1,
        match: (args) =>
          (args[2] as Array<{ text: string }>).some((record) => record.text.includes('stuck')),
        gate: never.promise,
      });
      const stuck = run.append({ type: 'token', data: { text: 'stuck' } });
      const cancelling = run.cancel();
      const busy = store.beginRun(session.id, { userMessage: userInput('next') });
      expect(await settlesPromptly(busy), 'beginRun answers at once').toBe(true);
      await expectTypedError(busy, SessionBusyError);
      expect(await settlesPromptly(cancelling), 'the cancel waits for the append').toBe(false);
      await env.clock.advance(5_000);
      expect(await cancelling).toMatchObject({ cancelled: true });
      const next = await store.beginRun(session.id, { userMessage: userInput('next') });
      await next.complete({ assistantMessages: [{ role: 'assistant', content: 'fine now' }] });
      const before = contentsOf(await (await env.openStore()).store.load(session.id));
      // The stuck call finally goes through: it can no longer change the transcript.
      never.resolve();
      const error = await captureError(() => stuck);
      expect(
        error === undefined || JournalSealedError.isInstance(error),
        'the late append is refused as sealed (or was stored before the cancel)',
      ).toBe(true);
      const after = contentsOf(await (await env.openStore()).store.load(session.id));
      expect(after).toEqual(before);
      expect(after).toEqual(['hang', 'before the hang', expect.any(String), 'next', 'fine now']);
    },
  );

  suite.test(
    'E6',
    "fail() after another instance's cancel ends the run here too: it reports already-finished, the run is no longer active and the session takes a new run (D4)",
    async (env) => {
      const owner = await env.openStore(WORKER);
      const other = await env.openStore(WORKER);
      const session = await owner.store.create({ id: env.id() }, { fsync: true });
      const run = await owner.store.beginRun(session.id, { userMessage: userInput('q') });
      await run.append({ type: 'token', data: { text: 'partial' } });
      expect(await other.store.cancelRun(session.id)).toMatchObject({ cancelled: true });
      expect(await run.fail({ message: 'provider exploded' })).toEqual({
        cancelled: false,
        reason: 'already-finished',
      });
      expect(run.active, 'the run knows it no longer owns the turn').toBe(false);
      const next = await owner.store.beginRun(session.id, { userMessage: userInput('again') });
      await next.complete({ assistantMessages: [{ role: 'assistant', content: 'fine' }] });
      const stored = await (await env.openStore()).store.load(session.id);
      expect(markersOf(stored).map((message) => message.marker!.type)).toEqual(['cancelled']);
      expect(contentsOf(stored)).toEqual(['q', 'partial', expect.any(String), 'again', 'fine']);
    },
  );

  suite.test(
    'D4',
    'cancel() of a run fenced out before it wrote anything, after a later turn was answered, changes nothing and says so (its stale cache is refreshed first)',
    async (env) => {
      const owner = await env.openStore(WORKER);
      const session = await owner.store.create({ id: env.id() }, { fsync: true });
      const run = await owner.store.beginRun(session.id, { userMessage: userInput('user 1') });
      await env.clock.advance(PAST_GRACE_MS);
      const other = await env.openStore(WORKER);
      await other.store.load(session.id);
      const later = await other.store.beginRun(session.id, { userMessage: userInput('user 2') });
      await later.complete({ assistantMessages: [{ role: 'assistant', content: 'answer 2' }] });
      const reader = await env.openStore();
      const before = (await reader.store.load(session.id)).messages;
      const records = (await reader.store.readJournal(session.id, run.runId)).records.length;
      expect(await run.cancel()).toEqual({ cancelled: false, reason: 'not-active' });
      expect(run.active).toBe(false);
      const after = await (await env.openStore()).store.load(session.id);
      expect(after.messages, 'the answered later turn is never rewritten').toEqual(before);
      expect(markersOf(after).map((message) => message.marker!.type)).toEqual(['interrupted']);
      const journal = await reader.store.readJournal(session.id, run.runId);
      expect(journal.records, 'no cancel record for a turn already answered').toHaveLength(records);
    },
  );
}
