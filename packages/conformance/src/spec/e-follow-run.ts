/**
 * E9: following a run (`store.followRun`). Every record once and in order from the sequence
 * asked for, one ending for every way a run ends (completed, cancelled, failed, cancelled by
 * another instance, repaired after its owner died with or without records, answered but
 * never sealed, deleted), whichever instance streams it, and a slow consumer that loses
 * nothing. A follower on another instance reads on its poll interval, set small here so
 * the tests wait for events, never for the default.
 */
import {
  BackendUnavailableError,
  type JournalRecord,
  NotFoundError,
  type RunEnding,
  SessionBusyError,
} from '@keepsake/core';
import { expect } from 'vitest';
import type { OpenedStore, TestEnvironment } from '../harness/environment.js';
import { captureError, expectTypedError, userInput } from '../harness/fixtures.js';
import { advanceUntil, type Followed, follow } from '../harness/follow.js';
import { markersOf, PAST_GRACE_MS, QUIET_WORKER } from '../harness/quiet-worker.js';
import type { SpecRegistrar } from '../harness/suite.js';
import { defineStalledEndingProperty } from './e-stalled-endings.js';

/** A follower on another instance reads this often (real time): only how soon, never what. */
const FOLLOWER = { runs: { followPollMs: 5, followPushedPollMs: 5 } } as const;

/** A follower that never polls in a test's time: only the backend's push can wake it. */
const PUSH_ONLY_FOLLOWER = {
  runs: { followPollMs: 3_600_000, followPushedPollMs: 3_600_000 },
} as const;

function expectInOrder(records: readonly JournalRecord[], from: number): void {
  expect(
    records.map((record) => record.sequence),
    'every record once, in order',
  ).toEqual(records.map((_, index) => from + index + 1));
}

async function startRun(env: TestEnvironment, owner: OpenedStore) {
  const session = await owner.store.create({ id: env.id() }, { fsync: true });
  const run = await owner.store.beginRun(session.id, { userMessage: userInput('question') });
  return { sessionId: session.id, run };
}

export function defineFollowRunTests(suite: SpecRegistrar): void {
  defineStalledEndingProperty(suite);
  suite.test(
    'E9',
    'followRun hands on every record once, in order, from the sequence asked for, and ends once with the journal ending; a follow that starts after the end gets the rest and the ending',
    async (env) => {
      const owner = await env.openStore();
      const { sessionId, run } = await startRun(env, owner);
      const here = follow(owner.store, sessionId, run.runId);
      for (let index = 0; index < 40; index++) {
        await run.append({ type: 'token', data: { text: `t${index} ` } });
      }
      await run.complete();
      const followed = await here;
      expectInOrder(followed.records, 0);
      const stored = await owner.store.readJournal(sessionId, run.runId);
      expect(followed.records).toEqual(stored.records);
      expect(followed.items.at(-1)).toEqual({ kind: 'end', ending: followed.ending });
      expect(followed.ending).toMatchObject({
        state: 'completed',
        reason: 'journal',
        markerMessage: null,
        lastSequence: stored.lastSequence,
      });

      // A reconnect from sequence 10, and one after the ending: the rest, then the ending.
      const reader = await env.openStore(FOLLOWER);
      const rest = await follow(reader.store, sessionId, run.runId, 10);
      expect(rest.records).toEqual(stored.records.slice(10));
      expect(rest.ending?.state).toBe('completed');
      const afterEnd = await follow(reader.store, sessionId, run.runId, stored.lastSequence);
      expect(afterEnd.records).toEqual([]);
      expect(afterEnd.ending?.state).toBe('completed');
    },
  );

  suite.test(
    'E9',
    'a follower on another instance gets the same records and ending as the run streams there',
    async (env) => {
      const owner = await env.openStore();
      const reader = await env.openStore(FOLLOWER);
      const { sessionId, run } = await startRun(env, owner);
      await run.append({ type: 'token', data: { text: 'first ' } });
      const there = follow(reader.store, sessionId, run.runId);
      for (let index = 0; index < 30; index++) {
        await run.append({ type: 'token', data: { text: `t${index} ` } });
      }
      await run.complete();
      const followed = await there;
      const stored = await owner.store.readJournal(sessionId, run.runId);
      expect(followed.records).toEqual(stored.records);
      expect(followed.ending).toMatchObject({ state: 'completed', reason: 'journal' });
    },
  );

  suite.test(
    'E9',
    'every way a run ends ends its followers, here and on another instance, with the terminal state and the marker a later load shows',
    async (env) => {
      const endings = [
        { name: 'cancel', state: 'interrupted-by-user', marker: 'cancelled' },
        { name: 'fail', state: 'errored', marker: 'errored' },
        { name: 'cancel from another instance', state: 'interrupted-by-user', marker: 'cancelled' },
      ] as const;
      for (const expected of endings) {
        const owner = await env.openStore();
        const reader = await env.openStore(FOLLOWER);
        const { sessionId, run } = await startRun(env, owner);
        await run.append({ type: 'token', data: { text: 'partial' } });
        const here = follow(owner.store, sessionId, run.runId);
        const there = follow(reader.store, sessionId, run.runId);
        if (expected.name === 'cancel') await run.cancel();
        else if (expected.name === 'fail') await run.fail({ message: 'the model failed' });
        else expect((await reader.store.cancelRun(sessionId, run.runId)).cancelled).toBe(true);
        const loaded = await reader.store.load(sessionId, { refresh: true });
        const marker = loaded.messages.find((message) => message.marker?.runId === run.runId);
        expect(marker?.marker?.type, expected.name).toBe(expected.marker);
        for (const followed of await Promise.all([here, there])) {
          expect(
            followed.records.map((record) => record.data),
            expected.name,
          ).toEqual([{ text: 'partial' }, expect.any(Object)]);
          expect(followed.ending, expected.name).toMatchObject({
            state: expected.state,
            reason: 'journal',
          });
          // The marker, when the follower read it: the same one the session shows.
          if (followed.ending?.markerMessage !== null) {
            expect(followed.ending?.markerMessage, expected.name).toEqual(marker);
          }
        }
      }
    },
  );

  suite.test(
    'E9',
    'a follower on another instance ends a run whose owner died: its own loads repair the turn once the grace has passed (F1), with records or before the first, and it ends with the crash marker',
    async (env) => {
      for (const withRecords of [true, false]) {
        // The follower starts before the grace has passed, or after (a reconnect): either
        // way one move of the clock past the grace is all it takes, never a second grace.
        for (const startsLate of [false, true]) {
          const owner = await env.openStore(QUIET_WORKER);
          const reader = await env.openStore(FOLLOWER);
          const { sessionId, run } = await startRun(env, owner);
          if (withRecords) await run.append({ type: 'token', data: { text: 'kept' } });
          env.killProcess(owner);
          let there: Promise<Followed>;
          if (startsLate) {
            await env.clock.advance(PAST_GRACE_MS);
            there = follow(reader.store, sessionId, run.runId);
          } else {
            there = follow(reader.store, sessionId, run.runId);
            // Let it catch up and go quiet first (its reads are real time).
            await new Promise((resolve) => setTimeout(resolve, 50));
            await env.clock.advance(PAST_GRACE_MS);
          }
          const followed = await there;
          const label = `${withRecords ? 'with records' : 'before its first record'}, ${startsLate ? 'followed after the grace' : 'followed before'}`;
          expect(followed.records.at(-1)?.type, label).toBe('interrupted');
          expect(followed.ending, label).toMatchObject({ state: 'interrupted-by-crash' });
          const loaded = await reader.store.load(sessionId);
          expect(loaded.pending, label).toBeNull();
          const marker = loaded.messages.find((message) => message.marker?.runId === run.runId);
          expect(marker?.marker?.type, label).toBe('interrupted');
          if (withRecords) {
            expect(followed.records[0]?.data, label).toEqual({ text: 'kept' });
            expect(
              loaded.messages.some((message) => message.content === 'kept'),
              label,
            ).toBe(true);
          }
        }
      }
    },
  );

  suite.test(
    'E9',
    "where the adapter can tell whether a run's owner is alive (liveness), a follower ends a dead owner's run at once, without waiting out the grace, and leaves a live but silent owner's run alone",
    async (env) => {
      const probe = await env.openStore();
      if (probe.adapter.liveness === undefined) {
        env.notVerifiedNote =
          "the adapter has no liveness: a dead owner's run is repaired once the grace has passed (F1)";
        return;
      }
      // Alive but silent: asked about, never taken over, however often the follower asks.
      const live = await env.openStore(QUIET_WORKER);
      const watcher = await env.openStore(FOLLOWER);
      const silent = await startRun(env, live);
      const controller = new AbortController();
      const watching = follow(
        watcher.store,
        silent.sessionId,
        silent.run.runId,
        0,
        controller.signal,
      );
      while (watcher.adapter.ownerChecks < 2)
        await new Promise((resolve) => setTimeout(resolve, 20));
      expect(
        (await watcher.store.load(silent.sessionId, { refresh: true })).pending?.streamId,
      ).toBe(silent.run.runId);
      controller.abort();
      expect((await watching).ending).toBeNull();
      await silent.run.append({ type: 'token', data: { text: 'still here' } });
      await silent.run.complete();

      // Dead: the clock never moves, yet the follower ends with the crash marker.
      for (const withRecords of [true, false]) {
        const owner = await env.openStore(QUIET_WORKER);
        const reader = await env.openStore(FOLLOWER);
        const { sessionId, run } = await startRun(env, owner);
        if (withRecords) await run.append({ type: 'token', data: { text: 'kept' } });
        env.killProcess(owner);
        // Its handles die with its process: the adapter it began the run with is gone (fs:
        // the token its process held is let go; memory: the adapter is closed).
        await owner.adapter.inner.close();
        const followed = await follow(reader.store, sessionId, run.runId);
        const label = withRecords ? 'with records' : 'before its first record';
        expect(followed.records.at(-1)?.type, label).toBe('interrupted');
        expect(followed.ending, label).toMatchObject({ state: 'interrupted-by-crash' });
        expect(followed.ending?.markerMessage?.marker.type, label).toBe('interrupted');
        if (withRecords) expect(followed.records[0]?.data, label).toEqual({ text: 'kept' });
      }
    },
  );

  suite.test(
    'E9',
    'where the adapter pushes appends made elsewhere (watchLog), a follower on another instance gets each record as it is appended and the ending, though its poll is an hour',
    async (env) => {
      const owner = await env.openStore();
      const reader = await env.openStore(PUSH_ONLY_FOLLOWER);
      const { sessionId, run } = await startRun(env, owner);
      // Whether this adapter pushes here at all (a network filesystem cannot): asked once.
      await reader.store.readJournal(sessionId, run.runId);
      const probe = reader.adapter.watchLog?.(sessionId, run.runId, () => undefined) ?? null;
      probe?.();
      if (probe === null) {
        env.notVerifiedNote =
          'the adapter does not push appends made elsewhere here (no watchLog, or it answered null): a follower on another instance sees them at its next poll (runs.followPollMs)';
        await run.complete();
        return;
      }
      const iterator = reader.store
        .followRun(sessionId, run.runId, { after: 0 })
        [Symbol.asyncIterator]();
      // Each record is appended only after the follower asked for the next one, so it can
      // only learn of it by the push (its poll waits an hour).
      for (let index = 0; index < 3; index++) {
        const next = iterator.next();
        await run.append({ type: 'token', data: { text: `pushed ${index}` } });
        const item = await next;
        expect(item.value).toMatchObject({
          kind: 'record',
          record: { sequence: index + 1, data: { text: `pushed ${index}` } },
        });
      }
      const ending = iterator.next();
      await run.complete();
      expect((await ending).value).toMatchObject({ kind: 'record', record: { type: 'done' } });
      expect((await iterator.next()).value).toMatchObject({
        kind: 'end',
        ending: { state: 'completed' },
      });
      expect(reader.adapter.logPushes, 'the pushes that woke it').toBeGreaterThan(0);
    },
  );

  suite.test(
    'E6',
    "a run whose ending cannot be recorded (fail() or complete() threw: the backend refused) still ends on its own instance: until the grace has passed the session stays busy and a retried fail() records the failure; after it, the instance's own followers end and its loads repair the turn (the output kept, one crash marker), the run is refused as over, and the session takes a new run; a complete() whose answer was stored before its seal failed frees the session at once (F1, E9)",
    async (env) => {
      const options = { journal: { durability: 'each' }, ...FOLLOWER } as const;
      const owner = await env.openStore(options);
      const refuse = (type: string) =>
        owner.adapter.inject({
          method: 'appendLog',
          match: ([, , records]) =>
            (records as { text: string }[]).some((record) =>
              record.text.includes(`"type":"${type}"`),
            ),
          // FAULT INJECTION: the backend refuses the ending's record (a failover, say).
          error: () => new BackendUnavailableError(owner.adapter.name, 'FAULT INJECTION'),
        });
      const again = { userMessage: userInput('again') };

      // A retried fail() before the grace records the failure.
      const retried = await startRun(env, owner);
      let removeFault = refuse('error');
      expect(
        await captureError(() => retried.run.fail({ message: 'the model failed' })),
      ).toBeInstanceOf(BackendUnavailableError);
      await expectTypedError(owner.store.beginRun(retried.sessionId, again), SessionBusyError);
      removeFault();
      expect(await retried.run.fail({ message: 'the model failed' })).toMatchObject({
        cancelled: true,
      });
      const failed = await owner.store.load(retried.sessionId);
      expect(markersOf(failed).map((message) => message.marker?.type)).toEqual(['errored']);

      // Never retried: the run ends all the same, once the grace has passed.
      const { sessionId, run } = await startRun(env, owner);
      await run.append({ type: 'token', data: { text: 'kept' } });
      removeFault = refuse('error');
      expect(await captureError(() => run.fail({ message: 'the model failed' }))).toBeInstanceOf(
        BackendUnavailableError,
      );
      removeFault();
      await expectTypedError(owner.store.beginRun(sessionId, again), SessionBusyError);
      const following = follow(owner.store, sessionId, run.runId);
      await advanceUntil(env, following);
      const followed = await following;
      expect(followed.records[0]?.data).toEqual({ text: 'kept' });
      expect(followed.ending).toMatchObject({ state: 'interrupted-by-crash' });
      const repaired = await owner.store.load(sessionId);
      expect(repaired.pending).toBeNull();
      expect(markersOf(repaired).map((message) => message.marker?.type)).toEqual(['interrupted']);
      expect(repaired.messages.some((message) => message.content === 'kept')).toBe(true);
      expect(await run.fail({ message: 'too late' })).toEqual({
        cancelled: false,
        reason: 'not-active',
      });
      await (await owner.store.beginRun(sessionId, again)).complete();

      // complete() stored the answer, then its seal was refused: over at once.
      const answered = await startRun(env, owner);
      await answered.run.append({ type: 'token', data: { text: 'the answer' } });
      removeFault = refuse('done');
      expect(await captureError(() => answered.run.complete())).toBeInstanceOf(
        BackendUnavailableError,
      );
      removeFault();
      const next = await owner.store.beginRun(answered.sessionId, again);
      await next.complete();
      const both = await owner.store.load(answered.sessionId);
      expect(both.messages.filter((message) => message.content === 'the answer')).toHaveLength(1);
      expect(markersOf(both)).toEqual([]);
    },
  );

  suite.test(
    'E9',
    'a run whose turn was answered but whose journal never got its ending (its process died between the save and the seal) ends its followers as completed',
    async (env) => {
      const owner = await env.openStore({ journal: { durability: 'each' } });
      const reader = await env.openStore(FOLLOWER);
      const { sessionId, run } = await startRun(env, owner);
      await run.append({ type: 'token', data: { text: 'answer' } });
      // FAULT INJECTION: the process dies where the journal's ending would be written.
      owner.adapter.inject({
        method: 'appendLog',
        match: ([, , records]) =>
          (records as { text: string }[]).some((record) => record.text.includes('"type":"done"')),
        error: () => {
          env.killProcess(owner);
          return new Error('FAULT INJECTION: the process died before the seal');
        },
      });
      await captureError(() => run.complete());
      const there = follow(reader.store, sessionId, run.runId);
      await advanceUntil(env, there);
      const followed = await there;
      expect(followed.records.map((record) => record.type)).toEqual(['token', 'done']);
      expect(followed.ending).toMatchObject({ state: 'completed', markerMessage: null });
    },
  );

  suite.test(
    'E9',
    'a follower of a run whose session is deleted ends (nothing more will come), and a run id the session never had ends as unknown',
    async (env) => {
      const owner = await env.openStore(QUIET_WORKER);
      const reader = await env.openStore(FOLLOWER);
      const { sessionId, run } = await startRun(env, owner);
      // The reader holds the session (cached) before another instance deletes it: a fresh
      // load must not hand back, or repair, that ghost (B8; found on S3 by timing).
      await reader.store.load(sessionId);
      const there = follow(reader.store, sessionId, run.runId);
      expect(await owner.store.delete(sessionId)).toBe(true);
      await expectTypedError(reader.store.load(sessionId, { refresh: true }), NotFoundError);
      await advanceUntil(env, there);
      expect((await there).ending).toMatchObject({ state: null, reason: 'deleted' });

      const other = await owner.store.create({ id: env.id() }, { fsync: true });
      const unknown = await follow(reader.store, other.id, 'never-begun');
      expect(unknown.records).toEqual([]);
      expect(unknown.ending).toMatchObject({ state: null, reason: 'unknown' });
    },
  );

  suite.test(
    'E9',
    'a consumer that stops pulling while the run streams on misses nothing: the follower reads what it could not hold, here and on another instance',
    async (env) => {
      const owner = await env.openStore();
      const reader = await env.openStore(FOLLOWER);
      const { sessionId, run } = await startRun(env, owner);
      const iterators = [owner.store, reader.store].map((store) =>
        store.followRun(sessionId, run.runId)[Symbol.asyncIterator](),
      );
      await run.append({ type: 'token', data: { text: 'first' } });
      for (const iterator of iterators) {
        const first = await iterator.next();
        expect(first.value).toMatchObject({ kind: 'record', record: { sequence: 1 } });
      }
      // More than a follower holds for its consumer (FOLLOWER_BUFFER, 256) while nobody pulls.
      for (let index = 0; index < 300; index++) {
        await run.append({ type: 'token', data: { text: `t${index}` } });
      }
      await run.complete();
      const stored = await owner.store.readJournal(sessionId, run.runId);
      for (const iterator of iterators) {
        const records: JournalRecord[] = [];
        let ending: RunEnding | null = null;
        for (;;) {
          const next = await iterator.next();
          if (next.done === true) break;
          if (next.value.kind === 'record') records.push(next.value.record);
          if (next.value.kind === 'end') ending = next.value.ending;
        }
        expectInOrder(records, 1);
        expect(records).toEqual(stored.records.slice(1));
        expect(ending?.state).toBe('completed');
      }
    },
  );

  suite.test(
    'E9',
    'a follower stops without an ending when its signal aborts, and when its store closes',
    async (env) => {
      const owner = await env.openStore(QUIET_WORKER);
      const reader = await env.openStore(FOLLOWER);
      const { sessionId, run } = await startRun(env, owner);
      const controller = new AbortController();
      const aborted = follow(reader.store, sessionId, run.runId, 0, controller.signal);
      const closing = follow(owner.store, sessionId, run.runId);
      await run.append({ type: 'token', data: { text: 'one' } });
      controller.abort();
      expect((await aborted).ending).toBeNull();
      await env.closeStore(owner);
      expect((await closing).ending).toBeNull();
    },
  );
}
