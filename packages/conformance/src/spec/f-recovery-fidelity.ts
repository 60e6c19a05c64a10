/**
 * F1–F4, D4: what the transcript says after a race, a crash or a journal that is late or
 * unreadable. Found outside the suite: recovery dropped error texts, left tool-only output
 * without a message, merged tool calls of different turns, never folded in output that
 * arrived after a repair, read journals it could no longer use, failed a load on a journal
 * I/O error, returned stale data after losing a repair race, and let a fenced run rewrite
 * a turn that a later turn had already answered.
 */
import {
  BackendError,
  MARKER_WORDING,
  type Message,
  RunNotActiveError,
  RunTakenOverError,
  type Session,
} from '@keepsake/core';
import { expect } from 'vitest';
import type { OpenedStore, TestEnvironment } from '../harness/environment.js';
import { contentsOf, expectTypedError, textMessage, userInput } from '../harness/fixtures.js';
import { holdNextSessionWrite } from '../harness/held-adapter-call.js';
import type { SpecRegistrar } from '../harness/suite.js';

const PAST_GRACE_MS = 31_000;
/** A worker whose checkpoints never fire, so only the test decides when a run looks dead. */
const WORKER = {
  journal: { durability: 'each' },
  checkpoint: { intervalMs: 3_600_000, idleRefreshMs: 3_600_000 },
} as const;

type PlantedEvent = { type: string; data?: Record<string, unknown>; eventId?: string };

/** Appends records to a run's journal straight through an adapter, after what is there. */
async function plant(
  env: TestEnvironment,
  sessionId: string,
  runId: string,
  events: PlantedEvent[],
): Promise<void> {
  const raw = await env.rawAdapter();
  const existing = await raw.readLog(sessionId, runId, { afterSequence: 0, limit: 100_000 });
  const first = (existing.records.at(-1)?.sequence ?? 0) + 1;
  const records = events.map((event, index) => ({
    sequence: first + index,
    text: JSON.stringify({
      sessionId,
      runId,
      sequence: first + index,
      eventId: event.eventId ?? `planted-${first + index}`,
      type: event.type,
      data: event.data ?? {},
      at: env.clock.now(),
    }),
  }));
  expect((await raw.appendLog(sessionId, runId, records, { durability: 'each' })).ok).toBe(true);
}

/** A run started by a worker that then died; returns its ids (nothing is repaired yet). */
async function deadRun(
  env: TestEnvironment,
  history: Message[] = [],
  stream: (run: {
    append(event: PlantedEvent): Promise<unknown>;
  }) => Promise<void> = async () => {},
): Promise<{ sessionId: string; runId: string }> {
  const worker = await env.openStore(WORKER);
  const session = await worker.store.create({ id: env.id(), messages: history }, { fsync: true });
  const run = await worker.store.beginRun(session.id, { userMessage: userInput('the question') });
  await stream(run as never);
  await env.crash(worker);
  return { sessionId: session.id, runId: run.runId };
}

function lastMarker(session: Session): Message {
  const marker = session.messages.findLast((message) => message.marker !== undefined);
  expect(marker, 'the transcript has a marker').toBeDefined();
  return marker!;
}

export function defineRecoveryFidelityTests(suite: SpecRegistrar): void {
  suite.test(
    'F1',
    "a recovered failed run's marker carries the error's own text, as run.fail() writes it",
    async (env) => {
      const { sessionId, runId } = await deadRun(env, [], async (run) => {
        await run.append({ type: 'token', data: { text: 'Current partial output.' } });
      });
      await plant(env, sessionId, runId, [
        { type: 'error', data: { message: 'gateway exploded', code: null } },
      ]);
      await env.clock.advance(PAST_GRACE_MS);
      const { store } = await env.openStore();
      const loaded = await store.load(sessionId);
      const marker = lastMarker(loaded);
      expect(marker.marker).toMatchObject({ type: 'errored', wording: 'errored', runId });
      expect(marker.content).toBe(`${MARKER_WORDING.errored} gateway exploded`);
      expect(contentsOf(loaded)).toContain('Current partial output.');
    },
  );

  suite.test(
    'F2',
    'a pending-retry marker whose journal turns out to end in an error becomes that error marker',
    async (env) => {
      const { sessionId, runId } = await deadRun(env);
      await env.clock.advance(PAST_GRACE_MS);
      const opened = await env.openStore();
      const hidden = opened.adapter.inject({
        method: 'readLog',
        match: (args) => args[1] === runId,
        replace: async () => ({ exists: false, records: [], tornTail: false }),
      });
      expect(lastMarker(await opened.store.load(sessionId)).marker!.wording).toBe('pending-retry');
      hidden();
      await plant(env, sessionId, runId, [
        { type: 'token', data: { text: 'half an answer' } },
        { type: 'error', data: { message: 'provider exploded', code: null } },
      ]);
      const reader = await env.openStore();
      const loaded = await reader.store.load(sessionId);
      const marker = lastMarker(loaded);
      expect(marker.marker).toMatchObject({ type: 'errored', wording: 'errored' });
      expect(marker.content).toBe(`${MARKER_WORDING.errored} provider exploded`);
      expect(contentsOf(loaded)).toContain('half an answer');
    },
  );

  suite.test(
    'E5',
    'tool calls made before any text belong to an assistant message of their run',
    async (env) => {
      const { store } = await env.openStore();
      const session = await store.create({ id: env.id() });
      const run = await store.beginRun(session.id, { userMessage: userInput('look it up') });
      await run.append({ type: 'tool', data: { name: 'search', toolCallId: 'c1' } });
      await run.append({ type: 'tool_result', data: { toolCallId: 'c1', result: 'found' } });
      await run.append({ type: 'token', data: { text: 'Here it is.' } });
      await run.complete();
      const call = session.toolCalls.find((candidate) => candidate.id === 'c1');
      const host = session.messages.find((message) => message.id === call?.messageId);
      expect(host, 'the call names an existing message').toBeDefined();
      expect(host).toMatchObject({ role: 'assistant', runId: run.runId });
    },
  );

  suite.test(
    'F4',
    'a dead run with tool calls and no text gets one host message, however often it is loaded',
    async (env) => {
      const { sessionId, runId } = await deadRun(env, [], async (run) => {
        await run.append({ type: 'tool', data: { name: 'terminal', toolCallId: 'c1' } });
        await run.append({ type: 'tool_result', data: { toolCallId: 'c1', result: 'ok' } });
      });
      await env.clock.advance(PAST_GRACE_MS);
      const opened = await env.openStore();
      const first = await opened.store.load(sessionId);
      const call = first.toolCalls.find((candidate) => candidate.id === 'c1');
      expect(call?.messageId).toBeDefined();
      expect(first.messages.find((message) => message.id === call!.messageId)).toMatchObject({
        role: 'assistant',
        runId,
      });
      const hosts = (session: Session) =>
        session.messages.filter(
          (message) => message.role === 'assistant' && message.runId === runId && !message.marker,
        ).length;
      expect(hosts(first)).toBe(1);
      for (let load = 0; load < 3; load++) {
        const reopened = await env.restartAfterCrash(opened);
        const again = await reopened.store.load(sessionId);
        expect(hosts(again)).toBe(1);
        expect(again.toolCalls.filter((candidate) => candidate.id === 'c1')).toHaveLength(1);
      }
    },
  );

  suite.test('F4', 'tool-call ids are scoped by run: a reused id does not collide', async (env) => {
    const worker = await env.openStore(WORKER);
    const session = await worker.store.create({ id: env.id() }, { fsync: true });
    const earlier = await worker.store.beginRun(session.id, { userMessage: userInput('first') });
    await earlier.append({ type: 'tool', data: { name: 'search', toolCallId: 'call_0' } });
    await earlier.append({ type: 'tool_result', data: { toolCallId: 'call_0', result: 'one' } });
    await earlier.complete();
    const dead = await worker.store.beginRun(session.id, { userMessage: userInput('second') });
    await dead.append({ type: 'tool', data: { name: 'fetch', toolCallId: 'call_0' } });
    await env.crash(worker);
    await env.clock.advance(PAST_GRACE_MS);
    const { store } = await env.openStore();
    const loaded = await store.load(session.id);
    const calls = loaded.toolCalls.filter((call) => call.id === 'call_0');
    expect(calls.map((call) => [call.runId, call.name])).toEqual([
      [earlier.runId, 'search'],
      [dead.runId, 'fetch'],
    ]);
  });

  suite.test(
    'F2',
    'output a recovered run appends after the repair is folded in by a later load',
    async (env) => {
      const { sessionId, runId } = await deadRun(env, [], async (run) => {
        await run.append({ type: 'token', data: { text: 'Before the repair.' } });
      });
      await env.clock.advance(PAST_GRACE_MS);
      const opened = await env.openStore();
      const repaired = await opened.store.load(sessionId);
      expect(lastMarker(repaired).marker!.wording).toBe('recovered');
      await plant(env, sessionId, runId, [
        { type: 'token', data: { text: ' And after it.' } },
        { type: 'tool', data: { name: 'late-tool', toolCallId: 'late-1' } },
      ]);
      const later = await opened.store.load(sessionId);
      expect(later.messages.map((message) => message.content).join('|')).toContain(
        'Before the repair. And after it.',
      );
      expect(later.toolCalls.find((call) => call.id === 'late-1')).toMatchObject({ runId });
      expect(later.messages.at(-1)!.marker, 'the marker stays last').toBeDefined();
    },
  );

  suite.test(
    'F2',
    'a watching marker followed by a later answered turn is settled without reading its journal',
    async (env) => {
      const { sessionId, runId } = await deadRun(env);
      await env.clock.advance(PAST_GRACE_MS);
      const first = await env.openStore();
      first.adapter.inject({
        method: 'readLog',
        match: (args) => args[1] === runId,
        replace: async () => ({ exists: false, records: [], tornTail: false }),
      });
      const repaired = await first.store.load(sessionId);
      expect(lastMarker(repaired).marker!.retry).toBeDefined();
      repaired.messages.push(
        textMessage(env, 'user', 'next question'),
        textMessage(env, 'assistant', 'next answer'),
      );
      await first.store.save(repaired, { fsync: true });
      const reader = await env.openStore();
      reader.adapter.clearCalls();
      const settled = await reader.store.load(sessionId);
      const marker = settled.messages.find((message) => message.marker?.runId === runId);
      expect(marker?.marker?.retry, 'the watch ended').toBeUndefined();
      expect(marker?.marker?.wording).toBe('neutral');
      await reader.store.load(sessionId);
      const again = await env.openStore();
      await again.store.load(sessionId);
      expect(reader.adapter.callsTo('readLog')).toEqual([]);
      expect(again.adapter.callsTo('readLog'), 'a load that cannot change anything').toEqual([]);
    },
  );

  suite.test(
    'F2',
    'an I/O error reading the journal does not fail the load; a later load picks it up',
    async (env) => {
      const { sessionId, runId } = await deadRun(env, [], async (run) => {
        await run.append({ type: 'token', data: { text: 'kept output' } });
      });
      await env.clock.advance(PAST_GRACE_MS);
      const opened = await env.openStore();
      const warnings: string[] = [];
      opened.store.on((event) => {
        if (event.type === 'warning') warnings.push(event.field);
      });
      const broken = opened.adapter.inject({
        method: 'readLog',
        match: (args) => args[1] === runId,
        error: () => new BackendError(opened.adapter.name, 'read a journal'),
      });
      const first = await opened.store.load(sessionId);
      expect(first.pending).toBeNull();
      expect(lastMarker(first).marker).toMatchObject({ wording: 'pending-retry' });
      expect(warnings).toContain('journal');
      broken();
      const second = await opened.store.load(sessionId);
      expect(contentsOf(second)).toContain('kept output');
      expect(lastMarker(second).marker!.wording).toBe('recovered');
    },
  );

  suite.test(
    'F2',
    'a run that died before its first record: after the grace the marker is final, and a late journal is still folded',
    async (env) => {
      const { sessionId, runId } = await deadRun(env);
      await env.clock.advance(PAST_GRACE_MS);
      const opened = await env.openStore();
      const first = await opened.store.load(sessionId);
      expect(lastMarker(first).marker!.wording).toBe('pending-retry');
      await env.clock.advance(PAST_GRACE_MS);
      const settled = lastMarker(await opened.store.load(sessionId));
      expect(settled.marker).toMatchObject({ type: 'interrupted', wording: 'neutral' });
      expect(settled.content).toBe(MARKER_WORDING.neutral);
      expect(
        settled.marker!.retry,
        'still watched in case the journal was only late',
      ).toBeDefined();
      await plant(env, sessionId, runId, [{ type: 'token', data: { text: 'it was only late' } }]);
      const late = await opened.store.load(sessionId);
      expect(contentsOf(late)).toContain('it was only late');
      expect(lastMarker(late).marker!.wording).toBe('recovered');
    },
  );

  suite.test(
    'F3',
    'a load whose repair lost the race to another instance returns what the winner stored',
    async (env) => {
      const { sessionId } = await deadRun(env, [], async (run) => {
        await run.append({ type: 'token', data: { text: 'partial' } });
      });
      await env.clock.advance(PAST_GRACE_MS);
      const loser = await env.openStore();
      const winner = await env.openStore();
      const held = holdNextSessionWrite(loser.adapter, sessionId);
      const losing = loser.store.load(sessionId);
      await held.entered;
      const won = await winner.store.load(sessionId);
      held.release();
      const lost = await losing;
      expect(lost.revision).toBe(won.revision);
      expect(contentsOf(lost)).toEqual(contentsOf(won));
      // Nobody else wrote: the loser's next save does not conflict.
      lost.messages.push(textMessage(env, 'user', 'follow-up'));
      await loser.store.save(lost);
    },
  );

  suite.test(
    'F4',
    'output the application saved during the run is merged with the journal once, in order',
    async (env) => {
      const worker = await env.openStore(WORKER);
      const session = await worker.store.create({ id: env.id() }, { fsync: true });
      const run = await worker.store.beginRun(session.id, { userMessage: userInput('question') });
      await run.append({ type: 'reasoning', data: { text: 'thinking it over' } });
      await run.append({ type: 'token', data: { text: 'Partial ' } });
      // The documented way to keep partial output in the transcript while the run is live:
      // an assistant message tagged with the run's id.
      session.messages.push(
        textMessage(env, 'assistant', 'Partial ', { runId: run.runId, id: env.id('app') }),
      );
      await worker.store.save(session, { fsync: true });
      await run.append({ type: 'token', data: { text: 'answer.' } });
      await env.crash(worker);
      await env.clock.advance(PAST_GRACE_MS);
      const { store } = await env.openStore();
      const loaded = await store.load(session.id);
      expect(contentsOf(loaded).slice(0, 2)).toEqual(['question', 'Partial answer.']);
      const answer = loaded.messages[1]!;
      expect(answer.id.startsWith('app-'), 'the saved message is kept and extended').toBe(true);
      expect(answer.reasoning).toBe('thinking it over');
      expect(lastMarker(loaded).marker!.wording).toBe('recovered');
      const reopened = await env.openStore();
      expect(contentsOf(await reopened.store.load(session.id))).toEqual(contentsOf(loaded));
    },
  );

  suite.test(
    'D4',
    'a fenced run never rewrites a turn that a later turn already answered: its appends are refused and complete() writes nothing',
    async (env) => {
      for (const ending of ['journal', 'assistantMessages'] as const) {
        const first = await env.openStore(WORKER);
        const session = await first.store.create({ id: env.id() }, { fsync: true });
        const run1 = await first.store.beginRun(session.id, { userMessage: userInput('user 1') });
        await run1.append({ type: 'token', data: { text: 'early output. ' } });
        await env.clock.advance(PAST_GRACE_MS);
        const second = await env.openStore(WORKER);
        await second.store.load(session.id);
        const run2 = await second.store.beginRun(session.id, { userMessage: userInput('user 2') });
        await run2.complete({ assistantMessages: [{ role: 'assistant', content: 'answer 2' }] });
        const expected = contentsOf(await (await env.openStore()).store.load(session.id));
        // The repair's crash record in its journal tells the run it no longer owns the turn:
        // the append is refused, never acknowledged into a journal nobody folds (D4).
        await expectTypedError(
          run1.append({ type: 'token', data: { text: 'late answer' } }),
          RunTakenOverError,
        );
        expect(run1.active, 'the run learns it was fenced out').toBe(false);
        await expectTypedError(
          ending === 'journal'
            ? run1.complete()
            : run1.complete({ assistantMessages: [{ role: 'assistant', content: 'late answer' }] }),
          RunNotActiveError,
        );
        const reader = await env.openStore();
        const stored = await reader.store.load(session.id);
        expect(contentsOf(stored), ending).toEqual(expected);
        expect(contentsOf(stored).at(-2)).toBe('user 2');
        expect(contentsOf(stored)).not.toContain('late answer');
        expect(
          stored.messages.some((message) => message.marker?.runId === run1.runId),
          'the interrupted marker of turn 1 stays',
        ).toBe(true);
        // Refused output is nowhere: the journal ends at the repair's crash record.
        const journal = await reader.store.readJournal(session.id, run1.runId);
        expect(journal.records.some((record) => record.data.text === 'late answer')).toBe(false);
        expect(journal.records.at(-1)?.type).toBe('interrupted');
        await finish(first, second);
      }
    },
  );
}

async function finish(...stores: OpenedStore[]): Promise<void> {
  for (const opened of stores) await opened.store.close();
}
