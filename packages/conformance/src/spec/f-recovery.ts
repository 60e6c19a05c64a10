/**
 * F1–F4: repair of a dead run's pending turn, lazy retry of a journal that is not
 * visible yet (ported from seed 004), single flight, idempotence.
 *
 * One file per contract area, so docs/contract.md links each clause to its tests; that
 * is why these files are longer than the house's usual ~300 lines.
 */
import {
  type LogReadResult,
  MARKER_WORDING,
  type Message,
  type Session,
  type SessionStore,
  type StoreEvent,
} from '@keepsake/core';
import { expect } from 'vitest';
import type { OpenedStore, TestEnvironment } from '../harness/environment.js';
import { contentsOf, settlesPromptly, textMessage, userInput } from '../harness/fixtures.js';
import { holdAdapterCall } from '../harness/held-adapter-call.js';
import { ownerIsGone } from '../harness/quiet-worker.js';
import type { SpecRegistrar } from '../harness/suite.js';
import { defineRecoveryFidelityTests } from './f-recovery-fidelity.js';
import { defineSlowRunRepairTests } from './f-slow-run-repair.js';

/** The default recovery grace period (F1) plus a margin. */
const PAST_GRACE_MS = 31_000;

/** A worker store whose checkpoints never fire, so only the test decides when a run looks dead. */
const WORKER = {
  journal: { durability: 'each' },
  checkpoint: { intervalMs: 3_600_000, idleRefreshMs: 3_600_000 },
} as const;

function markerOf(session: Session): Message {
  const marker = session.messages.at(-1);
  expect(marker?.marker, 'the last message is a marker').toBeDefined();
  return marker!;
}

/**
 * The seed's production shape: a session with history whose worker died mid-stream after
 * journaling text, a tool call and its result, then more text.
 */
async function deadRunWithOutput(env: TestEnvironment) {
  const worker = await env.openStore(WORKER);
  const history = Array.from({ length: 4 }, (_, index) =>
    textMessage(env, index % 2 ? 'assistant' : 'user', index % 2 ? `a${index}` : `q${index}`),
  );
  const session = await worker.store.create({ id: env.id(), messages: history }, { fsync: true });
  const run = await worker.store.beginRun(session.id, { userMessage: userInput('check the PRs') });
  const updatedAtBefore = session.updatedAt;
  await run.append({ type: 'token', data: { text: 'Checking GitHub first.' } });
  await run.append({
    type: 'tool',
    data: { name: 'terminal', toolCallId: 'tool-1', args: { command: 'gh pr list' } },
  });
  await run.append({ type: 'tool_result', data: { toolCallId: 'tool-1', result: '3 open PRs' } });
  await run.append({ type: 'token', data: { text: ' The first PR scan completed.' } });
  await env.crash(worker);
  return { worker, session, run, updatedAtBefore };
}

/** Hides one run's journal from a store, as a page cache or a slow mount would (F2). */
function hideJournal(opened: OpenedStore, runId: string, asEmpty = false): () => void {
  return opened.adapter.inject({
    method: 'readLog',
    match: (args) => args[1] === runId,
    replace: async () =>
      ({ exists: asEmpty, records: [], tornTail: false }) satisfies LogReadResult,
  });
}

/** A session whose last message is an interrupted marker still waiting for `streamId`'s journal. */
async function pendingRetrySession(
  env: TestEnvironment,
  store: SessionStore,
  streamId: string | null,
): Promise<Session> {
  const marker = textMessage(env, 'assistant', MARKER_WORDING['pending-retry'], {
    ...(streamId === null ? {} : { runId: streamId }),
    marker: {
      type: 'interrupted',
      wording: 'pending-retry',
      runId: streamId,
      retry: { streamId, attempts: 0, firstSeenAt: env.clock.now() },
    },
  });
  return store.create(
    { id: env.id(), messages: [textMessage(env, 'user', 'q'), marker] },
    { fsync: true },
  );
}

/** Writes journal records for a run straight through an adapter (a journal that "arrives"). */
async function plantJournal(
  env: TestEnvironment,
  sessionId: string,
  runId: string,
  events: Array<{ type: string; data?: Record<string, unknown> }>,
): Promise<void> {
  const raw = await env.rawAdapter();
  const records = events.map((event, index) => ({
    sequence: index + 1,
    text: JSON.stringify({
      sessionId,
      runId,
      sequence: index + 1,
      eventId: `event-${index + 1}`,
      type: event.type,
      data: event.data ?? {},
      at: env.clock.now(),
    }),
  }));
  expect((await raw.appendLog(sessionId, runId, records, { durability: 'each' })).ok).toBe(true);
}

/**
 * A session written by one store, waiting on a retry of `streamId`, whose journal (one
 * token, 'late text') has since arrived. Tests then open a fresh store to load it.
 */
async function sessionWithLateJournal(
  env: TestEnvironment,
): Promise<{ session: Session; streamId: string }> {
  const writer = await env.openStore();
  const streamId = env.id('stream');
  const session = await pendingRetrySession(env, writer.store, streamId);
  await plantJournal(env, session.id, streamId, [{ type: 'token', data: { text: 'late text' } }]);
  return { session, streamId };
}

export function defineRecovery(suite: SpecRegistrar): void {
  defineRepairTests(suite);
  defineLazyRetryTests(suite);
  defineSingleFlightTests(suite);
  defineIdempotenceTests(suite);
  defineRecoveryFidelityTests(suite);
  defineSlowRunRepairTests(suite);
}

function defineRepairTests(suite: SpecRegistrar): void {
  suite.test(
    'F1',
    "a dead run's pending turn is repaired on load: user turn restored, journal output above a recovered marker",
    async (env) => {
      const { session, run, updatedAtBefore } = await deadRunWithOutput(env);
      await env.clock.advance(PAST_GRACE_MS);
      const { store } = await env.openStore();
      const recoveries: StoreEvent[] = [];
      store.on((event) => {
        if (event.type === 'recovery') recoveries.push(event);
      });
      const loaded = await store.load(session.id);
      expect(loaded.pending).toBeNull();
      expect(contentsOf(loaded).slice(0, 5)).toEqual(['q0', 'a1', 'q2', 'a3', 'check the PRs']);
      expect(loaded.messages[4]).toMatchObject({ role: 'user', recovered: true });
      const marker = markerOf(loaded);
      expect(marker.marker).toMatchObject({
        type: 'interrupted',
        wording: 'recovered',
        runId: run.runId,
      });
      // F2: the run may only have been slow: its journal is still watched for late output.
      expect(marker.marker!.retry).toMatchObject({ streamId: run.runId, attempts: 0 });
      expect(marker.content).toBe(MARKER_WORDING.recovered);
      const recovered = loaded.messages.slice(5, -1);
      expect(
        recovered.every((message) => message.role === 'assistant' && message.recovered === true),
      ).toBe(true);
      expect(recovered.map((message) => message.content).join('')).toBe(
        'Checking GitHub first. The first PR scan completed.',
      );
      const tool = loaded.toolCalls.find((call) => call.name === 'terminal');
      expect(tool).toMatchObject({ done: true, result: '3 open PRs', recovered: true });
      expect(recovered.map((message) => message.id)).toContain(tool!.messageId);
      expect(loaded.updatedAt).toBe(updatedAtBefore);
      expect(recoveries).toHaveLength(1);
      const summary = await store.runSummary(session.id, run.runId);
      expect(summary.terminalState).toBe('interrupted-by-crash');
      const journal = await store.readJournal(session.id, run.runId);
      expect(journal.records.at(-1)!.type).toBe('interrupted');
    },
  );

  suite.test(
    'F1',
    'a pending turn inside the grace period is left alone, unless the adapter knows its owner is gone',
    async (env) => {
      const { session, run, worker } = await deadRunWithOutput(env);
      const reader = await env.openStore();
      const { store } = reader;
      const early = await store.load(session.id);
      if (await ownerIsGone(worker, reader)) {
        // Its process is certainly gone (fs: another boot): repaired at once, no grace.
        expect(early.pending).toBeNull();
        expect(markerOf(early).marker!.wording).toBe('recovered');
        return;
      }
      expect(early.pending?.streamId).toBe(run.runId);
      expect(early.messages.some((message) => message.marker !== undefined)).toBe(false);
      await env.clock.advance(PAST_GRACE_MS);
      const later = await store.load(session.id);
      expect(later.pending).toBeNull();
      expect(markerOf(later).marker!.wording).toBe('recovered');
    },
  );

  suite.test(
    'F1',
    'a journal that says the run completed completes the transcript, with no marker',
    async (env) => {
      const worker = await env.openStore(WORKER);
      const session = await worker.store.create({ id: env.id() }, { fsync: true });
      const run = await worker.store.beginRun(session.id, { userMessage: userInput('question') });
      await run.append({ type: 'token', data: { text: 'The full answer.' } });
      await run.append({ type: 'done' });
      await env.crash(worker);
      await env.clock.advance(PAST_GRACE_MS);
      const { store } = await env.openStore();
      const loaded = await store.load(session.id);
      expect(loaded.pending).toBeNull();
      expect(contentsOf(loaded)).toEqual(['question', 'The full answer.']);
      expect(loaded.messages.some((message) => message.marker !== undefined)).toBe(false);
      expect((await store.runSummary(session.id, run.runId)).terminalState).toBe('completed');
    },
  );

  suite.test('F1', 'a live run of this process is never repaired', async (env) => {
    const { store } = await env.openStore(WORKER);
    const session = await store.create({ id: env.id() });
    const run = await store.beginRun(session.id, { userMessage: userInput('slow question') });
    await env.clock.advance(10 * PAST_GRACE_MS);
    const loaded = await store.load(session.id);
    expect(loaded.pending?.streamId).toBe(run.runId);
    const completed = await run.complete({
      assistantMessages: [{ role: 'assistant', content: 'slow answer' }],
    });
    expect(contentsOf(completed)).toEqual(['slow question', 'slow answer']);
  });
}

function defineLazyRetryTests(suite: SpecRegistrar): void {
  suite.test(
    'F2',
    'a journal not visible at the first repair is retried on a later load and the output recovered',
    async (env) => {
      const { session, run } = await deadRunWithOutput(env);
      await env.clock.advance(PAST_GRACE_MS);
      const opened = await env.openStore();
      const reveal = hideJournal(opened, run.runId);
      const first = await opened.store.load(session.id);
      const marker = markerOf(first);
      expect(marker.marker).toMatchObject({
        type: 'interrupted',
        wording: 'pending-retry',
        retry: { streamId: run.runId, attempts: 0, firstSeenAt: env.clock.now() },
      });
      expect(first.pending).toBeNull();
      expect(contentsOf(first)).toContain('check the PRs');
      reveal();
      await env.clock.advance(1000);
      const second = await opened.store.load(session.id);
      expect(second).toBe(first);
      const promoted = markerOf(second);
      expect(promoted.marker!.wording).toBe('recovered');
      expect(promoted.marker!.retry, 'still watched for late output').toMatchObject({
        streamId: run.runId,
        attempts: 0,
      });
      const markerIndex = second.messages.indexOf(promoted);
      const recoveredText = second.messages
        .slice(0, markerIndex)
        .filter((message) => message.role === 'assistant' && message.recovered === true)
        .map((message) => message.content)
        .join('');
      expect(recoveredText).toBe('Checking GitHub first. The first PR scan completed.');
      expect(second.toolCalls.at(-1)).toMatchObject({ name: 'terminal', done: true });
      const reopened = await env.restartAfterCrash(opened);
      const persisted = await reopened.store.load(session.id);
      expect(contentsOf(persisted)).toEqual(contentsOf(second));
    },
  );

  suite.test('F2', 'a journal that is still arriving costs no retry attempt', async (env) => {
    const opened = await env.openStore();
    const streamId = env.id('stream');
    const session = await pendingRetrySession(env, opened.store, streamId);
    for (let load = 0; load < 20; load++) await opened.store.load(session.id);
    const hideAsEmpty = hideJournal(opened, streamId, true);
    for (let load = 0; load < 5; load++) await opened.store.load(session.id);
    hideAsEmpty();
    const marker = markerOf(await opened.store.load(session.id));
    expect(marker.marker).toMatchObject({ wording: 'pending-retry', retry: { attempts: 0 } });
    expect(marker.content).toBe(MARKER_WORDING['pending-retry']);
  });

  suite.test(
    'F2',
    'a sealed journal with nothing usable costs one attempt; at the maximum the marker is demoted',
    async (env) => {
      const opened = await env.openStore({ recovery: { maxAttempts: 3 } });
      const streamId = env.id('stream');
      const session = await pendingRetrySession(env, opened.store, streamId);
      await plantJournal(env, session.id, streamId, [{ type: 'stream_end' }]);
      const attempts: Array<number | undefined> = [];
      for (let load = 0; load < 3; load++) {
        const marker = markerOf(await opened.store.load(session.id));
        attempts.push(marker.marker!.retry?.attempts);
      }
      expect(attempts).toEqual([1, 2, undefined]);
      const loaded = await opened.store.load(session.id);
      const marker = markerOf(loaded);
      expect(marker.marker!.wording).toBe('neutral');
      expect(marker.content).toBe(MARKER_WORDING.neutral);
      expect(loaded.messages.some((message) => message.recovered === true)).toBe(false);
      const reopened = await env.restartAfterCrash(opened);
      expect(markerOf(await reopened.store.load(session.id)).marker!.retry).toBeUndefined();
    },
  );

  suite.test(
    'F2',
    'after the give-up age the marker is demoted whatever the journal says',
    async (env) => {
      const opened = await env.openStore({ recovery: { giveUpMs: 60_000 } });
      const streamId = env.id('stream');
      const session = await pendingRetrySession(env, opened.store, streamId);
      await opened.store.load(session.id);
      await env.clock.advance(60_001);
      const marker = markerOf(await opened.store.load(session.id));
      expect(marker.marker!.wording).toBe('neutral');
      expect(marker.marker!.retry).toBeUndefined();
    },
  );

  suite.test('F2', 'a marker without a stream id is demoted at once', async (env) => {
    const opened = await env.openStore();
    const session = await pendingRetrySession(env, opened.store, null);
    const reopened = await env.restartGracefully(opened);
    const marker = markerOf(await reopened.store.load(session.id));
    expect(marker.marker!.wording).toBe('neutral');
    expect(marker.marker!.retry).toBeUndefined();
  });
}

function defineSingleFlightTests(suite: SpecRegistrar): void {
  suite.test(
    'F3',
    'concurrent loads run the retry once; the others return without waiting for it',
    async (env) => {
      const { session, streamId } = await sessionWithLateJournal(env);
      const opened = await env.openStore();
      let retries = 0;
      const retry = holdAdapterCall(opened.adapter, {
        method: 'readLog',
        match: (args) => args[1] === streamId,
        onCall: () => {
          retries++;
        },
      });
      const first = opened.store.load(session.id);
      await retry.entered;
      const second = opened.store.load(session.id);
      expect(await settlesPromptly(second), 'the second load does not wait for the retry').toBe(
        true,
      );
      retry.release();
      const [firstLoaded, secondLoaded] = await Promise.all([first, second]);
      expect(secondLoaded).toBe(firstLoaded);
      expect(retries).toBe(1);
      expect(markerOf(firstLoaded).marker!.wording).toBe('recovered');
      expect(contentsOf(firstLoaded)).toContain('late text');
    },
  );

  suite.test('F3', 'loads racing on a cold store run the retry once', async (env) => {
    const { session, streamId } = await sessionWithLateJournal(env);
    const opened = await env.openStore();
    let retries = 0;
    opened.adapter.inject({
      method: 'readLog',
      match: (args) => args[1] === streamId,
      replace: async (_args, real) => {
        retries++;
        return real();
      },
    });
    const loaded = await Promise.all(
      Array.from({ length: 5 }, () => opened.store.load(session.id)),
    );
    expect(new Set(loaded).size).toBe(1);
    expect(retries).toBe(1);
    expect(markerOf(await opened.store.load(session.id)).marker!.wording).toBe('recovered');
  });

  suite.test(
    'F3',
    "a load under the caller's own lock skips the repair without deadlock; a later load does it",
    async (env) => {
      const { session } = await sessionWithLateJournal(env);
      const { store } = await env.openStore();
      const underLock = await store.withLock(session.id, () => store.load(session.id));
      expect(markerOf(underLock).marker!.wording).toBe('pending-retry');
      const later = await store.load(session.id);
      expect(markerOf(later).marker!.wording).toBe('recovered');
      expect(contentsOf(later)).toContain('late text');
    },
  );
}

function defineIdempotenceTests(suite: SpecRegistrar): void {
  suite.test(
    'F4',
    'loading again, and from new store instances, never duplicates recovered output',
    async (env) => {
      const { session } = await deadRunWithOutput(env);
      await env.clock.advance(PAST_GRACE_MS);
      const opened = await env.openStore();
      const first = await opened.store.load(session.id);
      const snapshot = first.messages.map((message) => [message.id, message.content]);
      const toolCount = first.toolCalls.length;
      for (let load = 0; load < 3; load++) await opened.store.load(session.id);
      await env.clock.advance(PAST_GRACE_MS);
      const reopened = await env.restartAfterCrash(opened);
      for (let load = 0; load < 2; load++) {
        const loaded = await reopened.store.load(session.id);
        expect(loaded.messages.map((message) => [message.id, message.content])).toEqual(snapshot);
        expect(loaded.toolCalls).toHaveLength(toolCount);
      }
    },
  );

  suite.test(
    'F4',
    'recovered output is tagged with its run and events; de-duplication is by tags, never by text',
    async (env) => {
      const worker = await env.openStore(WORKER);
      const session = await worker.store.create(
        {
          id: env.id(),
          messages: [textMessage(env, 'user', 'say OK'), textMessage(env, 'assistant', 'OK')],
        },
        { fsync: true },
      );
      const run = await worker.store.beginRun(session.id, { userMessage: userInput('say OK') });
      await run.append({ type: 'token', data: { text: 'OK' } });
      await env.crash(worker);
      await env.clock.advance(PAST_GRACE_MS);
      const { store } = await env.openStore();
      const loaded = await store.load(session.id);
      expect(contentsOf(loaded).filter((content) => content === 'OK')).toHaveLength(2);
      expect(contentsOf(loaded).filter((content) => content === 'say OK')).toHaveLength(2);
      const eventIds = (await store.readJournal(session.id, run.runId)).records.map(
        (record) => record.eventId,
      );
      const recovered = loaded.messages.filter(
        (message) => message.role === 'assistant' && message.recovered === true,
      );
      expect(recovered).toHaveLength(1);
      expect(recovered[0]!.journal?.runId).toBe(run.runId);
      expect(eventIds).toContain(recovered[0]!.journal?.eventId);
    },
  );
}
