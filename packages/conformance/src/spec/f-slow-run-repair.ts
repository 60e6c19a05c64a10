/**
 * F1, E6, D4: a repair that meets a run that was only slow. The repair decides the run is
 * dead from one read of its journal; the run may append before the repair's crash record
 * lands. Found by the randomized process-kill section (e-process-kills.ts): an append
 * acknowledged in that window was in the journal but in no answer once a later turn was
 * answered.
 */
import type { Session } from '@keepsake/core';
import { expect } from 'vitest';
import { userInput } from '../harness/fixtures.js';
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
    'a repair that meets a slow run: what it appended while the repair ran is in the answer at once, what it appends after the crash record is late output (D4)',
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
      // D4: the run learns it was taken over at its next append, which is late output.
      await run.append({ type: 'token', data: { text: 'after' } });
      expect(run.active).toBe(false);
      // While its turn is the last one answered, late output is folded in (F2) ...
      const next = await repairer.store.beginRun(session.id, { userMessage: userInput('next') });
      await next.complete({ assistantMessages: [{ role: 'assistant', content: 'next answer' }] });
      // ... and once a later turn was answered, never (D4).
      await run.append({ type: 'token', data: { text: ' too late' } });
      const reader = await env.openStore();
      const loaded = await reader.store.load(session.id);
      expect(answerOf(loaded, run.runId)).toBe('before during after');
      expect(
        (await reader.store.readJournal(session.id, run.runId)).records.map(
          (record) => record.type,
        ),
      ).toEqual(['token', 'token', 'interrupted', 'token', 'token']);
    },
  );
}
