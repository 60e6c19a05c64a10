/**
 * E6, E2: a cancel wins against the run's own stream. Found outside the suite: a cancel
 * from another instance lost every race against a run with queued appends and failed with
 * a JournalConflictError whose text made no sense.
 */
import { JournalSealedError, RunNotActiveError } from '@keepsake/core';
import { expect } from 'vitest';
import { contentsOf, userInput } from '../harness/fixtures.js';
import type { SpecRegistrar } from '../harness/suite.js';

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
        const outcome = await cancelling.store.cancelRun(session.id);
        expect(outcome, `round ${round}`).toMatchObject({ cancelled: true, runId: run.runId });
        const settled = await Promise.allSettled(appends);
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
}
