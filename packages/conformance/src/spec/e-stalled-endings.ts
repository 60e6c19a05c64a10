/**
 * E6, F1, E9 by property: a run's ending refused by the backend (its record, or its
 * session write) at random, retried or never retried. Whatever happened, the run ends on
 * its own instance: its follower there gets an ending (after the grace, when nothing
 * recorded one), the session keeps exactly the acknowledged tokens once with at most one
 * marker for the run, agreeing with what was recorded, and takes a new run. The server's
 * chaos test found a run whose fail() was refused during a Redis failover left live on its
 * instance for good: its stream never ended and its session stayed busy.
 */
import { BackendUnavailableError, KeepsakeError } from '@keepsake/core';
import fc from 'fast-check';
import { expect } from 'vitest';
import { registerProperty } from '../harness/bad-input-world.js';
import { captureError, userInput } from '../harness/fixtures.js';
import { advanceUntil, follow } from '../harness/follow.js';
import { markersOf } from '../harness/quiet-worker.js';
import type { SpecRegistrar } from '../harness/suite.js';

interface StalledEnding {
  readonly ending: 'complete' | 'cancel' | 'fail';
  /** The write refused while the ending runs: its journal record, or the session write. */
  readonly refused: 'record' | 'session';
  /** Whether the application retries a refused cancel() or fail() once the backend is back. */
  readonly retried: boolean;
  readonly tokens: number;
}

const stalledEnding: fc.Arbitrary<StalledEnding> = fc.record({
  ending: fc.constantFrom('complete', 'cancel', 'fail'),
  refused: fc.constantFrom('record', 'session'),
  retried: fc.boolean(),
  tokens: fc.integer({ min: 0, max: 3 }),
});

const RECORD_TYPE = { complete: 'done', cancel: 'cancel', fail: 'error' } as const;
const MARKER_TYPE = { cancel: 'cancelled', fail: 'errored' } as const;

export function defineStalledEndingProperty(suite: SpecRegistrar): void {
  registerProperty(
    suite,
    'E6:stalled-ending-property',
    "property: a run's complete(), cancel() or fail() refused by the backend (its journal record or its session write), retried or not: the run ends on its own instance (its follower there gets an ending, after the grace when nothing recorded one), the session holds the acknowledged tokens once and at most one marker for the run, agreeing with what was recorded, and takes a new run (F1, E9)",
    stalledEnding,
    async (env, { ending, refused, retried, tokens }) => {
      const owner = await env.openStore({
        journal: { durability: 'each' },
        runs: { followPollMs: 5, followPushedPollMs: 5 },
      });
      const { store, adapter } = owner;
      const session = await store.create({ id: env.id() }, { fsync: true });
      const run = await store.beginRun(session.id, { userMessage: userInput('question') });
      const texts = Array.from({ length: tokens }, (_, index) => `t${index} `);
      for (const text of texts) await run.append({ type: 'token', data: { text } });
      // FAULT INJECTION: the backend refuses one write of the ending (a failover, say).
      const disarm =
        refused === 'record'
          ? adapter.inject({
              method: 'appendLog',
              match: ([, , records]) =>
                (records as { text: string }[]).some((record) =>
                  record.text.includes(`"type":"${RECORD_TYPE[ending]}"`),
                ),
              error: () => new BackendUnavailableError(adapter.name, 'FAULT INJECTION'),
            })
          : adapter.inject({
              method: 'putDocument',
              match: ([collection, id]) => collection === 'sessions' && id === session.id,
              error: () => new BackendUnavailableError(adapter.name, 'FAULT INJECTION'),
            });
      const end = () =>
        ending === 'complete'
          ? run.complete()
          : ending === 'cancel'
            ? run.cancel()
            : run.fail({ message: 'the model failed' });
      const error = await captureError(end);
      disarm();
      if (error !== undefined) {
        expect(KeepsakeError.isInstance(error), String(error)).toBe(true);
        expect(run.stalled, 'a refused ending leaves the run stalled').toBe(run.active);
      }
      // A retry of a refused cancel() or fail() records it (a complete() whose answer was
      // stored is over: retrying it is not part of the property).
      let recorded = error === undefined;
      if (error !== undefined && retried && ending !== 'complete') {
        expect(await end()).toMatchObject({ cancelled: true });
        recorded = true;
      }
      const following = follow(store, session.id, run.runId);
      await advanceUntil(env, following);
      expect((await following).ending, 'the follower on its own instance ends').not.toBeNull();

      const stored = await store.load(session.id);
      expect(stored.pending, 'no turn is left pending').toBeNull();
      expect(run.active, 'the run is over here').toBe(false);
      const answer = stored.messages
        .filter((message) => message.runId === run.runId && message.role === 'assistant')
        .filter((message) => message.marker === undefined)
        .map((message) => (typeof message.content === 'string' ? message.content : ''))
        .join('');
      expect(answer, 'the acknowledged tokens, once').toBe(texts.join(''));
      const markers = markersOf(stored).filter((message) => message.marker?.runId === run.runId);
      expect(markers.length, 'at most one marker for the run').toBeLessThanOrEqual(1);
      const markerType = markers[0]?.marker?.type ?? null;
      if (ending === 'complete') {
        // Answered (the seal refused after the answer was stored), or repaired as a crash.
        expect([null, 'interrupted']).toContain(markerType);
        if (recorded) expect(markerType).toBeNull();
      } else if (recorded || refused === 'session') {
        // The record went in (it is written before the session): the marker agrees with it.
        expect(markerType).toBe(MARKER_TYPE[ending]);
      } else {
        expect(markerType).toBe('interrupted');
      }
      const next = await store.beginRun(session.id, { userMessage: userInput('again') });
      await next.complete();
    },
    [
      { ending: 'fail', refused: 'record', retried: false, tokens: 1 },
      { ending: 'complete', refused: 'record', retried: false, tokens: 2 },
      { ending: 'cancel', refused: 'session', retried: false, tokens: 0 },
    ],
  );
}
