/**
 * F1, E6, D4: a repair that meets a run that was only slow. The repair decides the run is
 * dead from one read of its journal; the run may append before the repair's crash record
 * lands. Found by the randomized process-kill section (e-process-kills.ts): an append
 * acknowledged in that window was in the journal but in no answer once a later turn was
 * answered.
 */
import {
  JournalSealedError,
  RunNotActiveError,
  RunTakenOverError,
  type Session,
} from '@keepsake/core';
import { expect } from 'vitest';
import { expectTypedError, userInput } from '../harness/fixtures.js';
import { holdAdapterCall } from '../harness/held-adapter-call.js';
import type { SpecRegistrar } from '../harness/suite.js';

/** The default recovery grace period (F1) plus a margin. */
const PAST_GRACE_MS = 31_000;

/** A run that checkpoints never, so only its journal says it is alive. */
const SLOW_WORKER = {
  journal: { durability: 'each' },
  checkpoint: { intervalMs: 3_600_000, idleRefreshMs: 3_600_000 },
} as const;

function answerOf(session: Session, runId: string): string {
  return session.messages
    .filter(
      (message) =>
        message.runId === runId && message.role === 'assistant' && message.marker === undefined,
    )
    .map((message) => String(message.content))
    .join('');
}

export function defineSlowRunRepairTests(suite: SpecRegistrar): void {
  suite.test(
    'F1',
    'a repair that meets a slow run: what it appended while the repair ran is in the answer at once, what it appends after the crash record is refused (D4)',
    async (env) => {
      const worker = await env.openStore(SLOW_WORKER);
      const session = await worker.store.create({ id: env.id() }, { fsync: true });
      const run = await worker.store.beginRun(session.id, { userMessage: userInput('question') });
      await run.append({ type: 'token', data: { text: 'before ' } });
      await env.clock.advance(PAST_GRACE_MS);
      const repairer = await env.openStore();
      // FAULT INJECTION (a hold): the repair's crash record waits while the run appends.
      const crashRecord = holdAdapterCall(repairer.adapter, {
        method: 'appendLog',
        times: 1,
        match: ([sessionId]) => sessionId === session.id,
      });
      const loading = repairer.store.load(session.id);
      await crashRecord.entered;
      await run.append({ type: 'token', data: { text: 'during ' } });
      crashRecord.release();
      const repaired = await loading;
      expect(repaired.pending, 'the repair ended the turn').toBeNull();
      expect(answerOf(repaired, run.runId), 'acknowledged before the crash record').toBe(
        'before during ',
      );
      // D4: the run learns it was taken over at its next append, which is refused: an
      // append either lands before the crash record (and is in the answer) or is refused.
      await expectTypedError(
        run.append({ type: 'token', data: { text: 'after' } }),
        RunTakenOverError,
      );
      expect(run.active).toBe(false);
      await expectTypedError(run.complete(), RunNotActiveError);
      const next = await repairer.store.beginRun(session.id, { userMessage: userInput('next') });
      await next.complete({ assistantMessages: [{ role: 'assistant', content: 'next answer' }] });
      await expectTypedError(
        run.append({ type: 'token', data: { text: ' too late' } }),
        RunTakenOverError,
      );
      const reader = await env.openStore();
      const loaded = await reader.store.load(session.id);
      expect(answerOf(loaded, run.runId)).toBe('before during ');
      expect(
        (await reader.store.readJournal(session.id, run.runId)).records.map(
          (record) => record.type,
        ),
      ).toEqual(['token', 'token', 'interrupted']);
    },
  );

  suite.test(
    'F2',
    'a run repaired before its first record is fenced at its first append: the repair creates its journal holding only the crash record, the append is refused, and the turn ends with no output (D4)',
    async (env) => {
      const worker = await env.openStore(SLOW_WORKER);
      const session = await worker.store.create({ id: env.id() }, { fsync: true });
      const run = await worker.store.beginRun(session.id, { userMessage: userInput('question') });
      await env.clock.advance(PAST_GRACE_MS);
      const repairer = await env.openStore();
      const repaired = await repairer.store.load(session.id);
      expect(repaired.pending, 'the repair ended the turn').toBeNull();
      const sealed = await repairer.store.readJournal(session.id, run.runId);
      expect(sealed.exists, 'the repair created the journal').toBe(true);
      expect(sealed.records.map((record) => record.type)).toEqual(['interrupted']);
      expect((await repairer.store.runSummary(session.id, run.runId)).terminalState).toBe(
        'interrupted-by-crash',
      );
      // The run was only slow: its first append learns it was taken over.
      await expectTypedError(
        run.append({ type: 'token', data: { text: 'too late' } }),
        RunTakenOverError,
      );
      expect(run.active).toBe(false);
      await expectTypedError(run.complete(), RunNotActiveError);
      const reader = await env.openStore();
      for (let load = 0; load < 2; load++) {
        const loaded = await reader.store.load(session.id);
        expect(answerOf(loaded, run.runId)).toBe('');
        expect(loaded.messages.filter((message) => message.content === 'question')).toHaveLength(1);
      }
      expect(
        (await reader.store.readJournal(session.id, run.runId)).records.map(
          (record) => record.type,
        ),
      ).toEqual(['interrupted']);
    },
  );

  suite.test(
    'E6',
    "a run's own handle refuses appends once the run ended: after complete(), cancel() or fail() an append throws JournalSealedError and writes nothing (D4)",
    async (env) => {
      const opened = await env.openStore(SLOW_WORKER);
      for (const ending of ['complete', 'cancel', 'fail'] as const) {
        const session = await opened.store.create({ id: env.id() }, { fsync: true });
        const run = await opened.store.beginRun(session.id, { userMessage: userInput('q') });
        await run.append({ type: 'token', data: { text: 'kept' } });
        if (ending === 'complete') await run.complete();
        else if (ending === 'cancel') await run.cancel();
        else await run.fail({ message: 'tool crashed' });
        const before = await opened.store.readJournal(session.id, run.runId);
        await expectTypedError(
          run.append({ type: 'token', data: { text: 'after the end' } }),
          JournalSealedError,
        );
        expect(run.active, ending).toBe(false);
        const after = await opened.store.readJournal(session.id, run.runId);
        expect(after.lastSequence, `${ending}: nothing written`).toBe(before.lastSequence);
        const loaded = await (await env.openStore()).store.load(session.id);
        expect(JSON.stringify(loaded.messages), ending).not.toContain('after the end');
      }
    },
  );
}
