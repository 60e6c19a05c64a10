/**
 * E1–E7: the durable pending turn, journal sequences and durability policies, torn
 * tails and gaps, periodic checkpoints, completing, cancelling and failing a run, one
 * active run per session.
 *
 * One file per contract area, so docs/contract.md links each clause to its tests; that
 * is why these files are longer than the house's usual ~300 lines.
 */
import {
  BackendError,
  type JournalDurabilityPolicy,
  type JournalRecord,
  JournalSealedError,
  type LogReadResult,
  type Message,
  SessionBusyError,
  type StoreEvent,
} from '@keepsake/core';
import { expect } from 'vitest';
import type { OpenedStore, TestEnvironment } from '../harness/environment.js';
import {
  contentsOf,
  deferred,
  drainCallbacks,
  expectTypedError,
  nextEvent,
  textMessage,
  userInput,
} from '../harness/fixtures.js';
import { holdNextSessionWrite } from '../harness/held-adapter-call.js';
import { type PersistedSession, readPersistedSession } from '../harness/persisted-document.js';
import { ownerIsGone } from '../harness/quiet-worker.js';
import type { SpecRegistrar } from '../harness/suite.js';
import { defineAnsweredRunTests } from './e-answered-run.js';
import { defineCancelRaceTests } from './e-cancel-races.js';
import { defineDamagedJournalTests } from './e-damaged-journals.js';
import { defineFollowRunTests } from './e-follow-run.js';
import { defineJournalPowerLossTests } from './e-journal-power-loss.js';
import { defineProcessKillTests } from './e-process-kills.js';
import { defineReplaceFromTests } from './e-replace-from.js';
import { defineRunLookupTests } from './e-run-lookup.js';
import { defineStaleCancelTests } from './e-stale-cancels.js';
import { defineTurnAttachmentTests } from './e-turn-attachments.js';

const CHECKPOINT = { checkpoint: { intervalMs: 100, idleRefreshMs: 1000 } } as const;

function sessionWrites(opened: OpenedStore, id: string) {
  return opened.adapter
    .callsTo('putDocument')
    .filter((call) => call.args[0] === 'sessions' && call.args[1] === id);
}

function checkpointEvent(opened: OpenedStore, sessionId: string) {
  return nextEvent<StoreEvent>(
    (listener) => opened.store.on(listener),
    (event) => event.type === 'checkpoint' && event.sessionId === sessionId,
  );
}

/** Captures what is persisted after every write of one session (read back from the adapter). */
function captureSnapshots(opened: OpenedStore, id: string): PersistedSession[] {
  const snapshots: PersistedSession[] = [];
  opened.adapter.inject({
    method: 'putDocument',
    match: ([collection, documentId]) => collection === 'sessions' && documentId === id,
    replace: async (_args, real) => {
      const result = await real();
      const persisted = await readPersistedSession(opened.adapter.inner, id);
      if (persisted !== null) snapshots.push(persisted);
      return result;
    },
  });
  return snapshots;
}

export function defineRunsAndJournal(suite: SpecRegistrar): void {
  definePendingTurnTests(suite);
  defineJournalTests(suite);
  defineCheckpointTests(suite);
  defineEndingTests(suite);
  defineTurnAttachmentTests(suite);
  defineCancelRaceTests(suite);
  defineRunLookupTests(suite);
  defineProcessKillTests(suite);
  defineAnsweredRunTests(suite);
  defineFollowRunTests(suite);
  defineStaleCancelTests(suite);
  defineReplaceFromTests(suite);
  defineDamagedJournalTests(suite);
  defineJournalPowerLossTests(suite);
}

function definePendingTurnTests(suite: SpecRegistrar): void {
  suite.test(
    'E1',
    'beginRun records the pending turn durably before it resolves, and a crash keeps it',
    async (env) => {
      const opened = await env.openStore();
      const session = await opened.store.create({ id: env.id() }, { fsync: true });
      opened.adapter.clearCalls();
      const startedAt = env.clock.now();
      const run = await opened.store.beginRun(session.id, {
        userMessage: userInput('remember this question'),
        attachments: [{ name: 'report.pdf', mimeType: 'application/pdf', size: 12 }],
      });
      const writes = sessionWrites(opened, session.id);
      expect(writes.some((call) => (call.args[3] as { durable: boolean }).durable)).toBe(true);
      await env.restartAfterCrash(opened);
      // Read as stored: a load might repair the turn at once (F1, an owner known gone).
      const loaded = (await readPersistedSession(await env.rawAdapter(), session.id))!.session;
      expect(loaded.pending).not.toBeNull();
      expect(loaded.pending!.streamId).toBe(run.streamId);
      expect(run.streamId).toBe(run.runId);
      expect(loaded.pending!.userMessage.content).toBe('remember this question');
      expect(loaded.pending!.attachments).toEqual([
        { name: 'report.pdf', mimeType: 'application/pdf', size: 12 },
      ]);
      expect(loaded.pending!.startedAt).toBe(startedAt);
    },
  );

  suite.test('E1', "a crash at any later instant never loses the user's message", async (env) => {
    const crashPoints = ['after begin', 'after tokens', 'after a tool', 'after complete'] as const;
    for (const point of crashPoints) {
      const opened = await env.openStore({ journal: { durability: 'terminal' } });
      const session = await opened.store.create({ id: env.id() }, { fsync: true });
      const run = await opened.store.beginRun(session.id, {
        userMessage: userInput(`ask ${point}`),
      });
      if (point !== 'after begin') await run.append({ type: 'token', data: { text: 'thinking' } });
      if (point === 'after a tool' || point === 'after complete') {
        await run.append({ type: 'tool', data: { name: 'search', toolCallId: 't1' } });
      }
      if (point === 'after complete') await run.complete();
      const reopened = await env.restartAfterCrash(opened);
      await env.clock.advance(60_000);
      const loaded = await reopened.store.load(session.id);
      const kept =
        contentsOf(loaded).includes(`ask ${point}`) ||
        loaded.pending?.userMessage.content === `ask ${point}`;
      expect(kept, point).toBe(true);
    }
  });

  suite.test(
    'E1',
    'when the pending turn cannot be written, beginRun fails and no run starts',
    async (env) => {
      const { store, adapter } = await env.openStore();
      const session = await store.create({ id: env.id() }, { fsync: true });
      const removeFault = adapter.inject({
        method: 'putDocument',
        match: ([collection, id]) => collection === 'sessions' && id === session.id,
        error: () => new BackendError(adapter.name, 'write a session'),
      });
      await expectTypedError(
        store.beginRun(session.id, { userMessage: userInput('lost?') }),
        BackendError,
      );
      removeFault();
      expect(store.activeRun(session.id)).toBeNull();
      expect((await store.load(session.id)).pending).toBeNull();
      const run = await store.beginRun(session.id, { userMessage: userInput('again') });
      expect(run.active).toBe(true);
    },
  );

  suite.test(
    'E7',
    'a second run while one owns the session is a SessionBusyError, in this and another instance',
    async (env) => {
      const opened = await env.openStore();
      const session = await opened.store.create({ id: env.id() }, { fsync: true });
      const run = await opened.store.beginRun(session.id, { userMessage: userInput('first') });
      const busy = await expectTypedError(
        opened.store.beginRun(session.id, { userMessage: userInput('second') }),
        SessionBusyError,
      );
      expect(busy.activeStreamId).toBe(run.streamId);
      const other = await env.openStore();
      await expectTypedError(
        other.store.beginRun(session.id, { userMessage: userInput('elsewhere') }),
        SessionBusyError,
      );
      await run.complete({ assistantMessages: [{ role: 'assistant', content: 'one' }] });
      const next = await opened.store.beginRun(session.id, { userMessage: userInput('third') });
      expect(next.active).toBe(true);
    },
  );

  suite.test(
    'E7',
    "a dead run's pending turn does not block a new run after the grace period; its user message is kept",
    async (env) => {
      const worker = await env.openStore({
        checkpoint: { intervalMs: 3_600_000, idleRefreshMs: 3_600_000 },
      });
      const session = await worker.store.create({ id: env.id() }, { fsync: true });
      await worker.store.beginRun(session.id, { userMessage: userInput('asked before the crash') });
      const successor = await env.restartAfterCrash(worker);
      // F1: inside the grace the turn blocks a new run, unless its owner is known gone.
      if (!(await ownerIsGone(worker, successor))) {
        await expectTypedError(
          successor.store.beginRun(session.id, { userMessage: userInput('too early') }),
          SessionBusyError,
        );
        await env.clock.advance(31_000);
      }
      const run = await successor.store.beginRun(session.id, {
        userMessage: userInput('asked after'),
      });
      const completed = await run.complete({
        assistantMessages: [{ role: 'assistant', content: 'answer' }],
      });
      const contents = contentsOf(completed);
      expect(contents.filter((content) => content === 'asked before the crash')).toHaveLength(1);
      expect(contents.indexOf('asked before the crash')).toBeLessThan(
        contents.indexOf('asked after'),
      );
      expect(contents.at(-1)).toBe('answer');
    },
  );

  suite.test(
    'E7',
    'streamed reasoning becomes display metadata of the answer, never its content',
    async (env) => {
      const opened = await env.openStore();
      const session = await opened.store.create({ id: env.id() });
      const run = await opened.store.beginRun(session.id, { userMessage: userInput('why?') });
      await run.append({ type: 'reasoning', data: { text: 'secret chain of thought' } });
      await run.append({ type: 'token', data: { text: 'Because.' } });
      await run.complete();
      const reopened = await env.restartAfterCrash(opened);
      const loaded = await reopened.store.load(session.id);
      const answer = loaded.messages.find((message) => message.role === 'assistant')!;
      expect(answer.content).toBe('Because.');
      expect(answer.reasoning).toBe('secret chain of thought');
      expect(JSON.stringify(loaded.messages.map((message) => message.content))).not.toContain(
        'secret chain of thought',
      );
    },
  );
}

function defineJournalTests(suite: SpecRegistrar): void {
  suite.test(
    'E2',
    'events get sequences 1, 2, 3… and every record names its session, run and event',
    async (env) => {
      const opened = await env.openStore();
      const session = await opened.store.create({ id: env.id() });
      const run = await opened.store.beginRun(session.id, { userMessage: userInput('go') });
      const types = ['token', 'reasoning', 'tool', 'tool_result', 'warning'] as const;
      const appended: JournalRecord[] = [];
      for (const type of types) appended.push(await run.append({ type, data: { text: type } }));
      appended.push(await run.append({ type: 'token', eventId: 'my-event', data: { text: 'x' } }));
      expect(appended.map((record) => record.sequence)).toEqual([1, 2, 3, 4, 5, 6]);
      expect(appended.at(-1)!.eventId).toBe('my-event');
      expect(new Set(appended.map((record) => record.eventId)).size).toBe(6);
      const journal = await opened.store.readJournal(session.id, run.runId);
      expect(journal.records).toEqual(appended);
      for (const record of journal.records) {
        expect([record.sessionId, record.runId]).toEqual([session.id, run.runId]);
      }
      expect(journal.gap).toBeNull();
      expect(await opened.store.listRuns(session.id)).toContain(run.runId);
    },
  );

  suite.test('E2', 'concurrent appends keep their order without gaps', async (env) => {
    const { store } = await env.openStore();
    const session = await store.create({ id: env.id() });
    const run = await store.beginRun(session.id, { userMessage: userInput('go') });
    const records = await Promise.all(
      Array.from({ length: 20 }, (_, index) =>
        run.append({ type: 'token', data: { text: `${index}` } }),
      ),
    );
    expect(records.map((record) => record.sequence)).toEqual(records.map((_, index) => index + 1));
    const journal = await store.readJournal(session.id, run.runId);
    expect(journal.records.map((record) => record.data.text)).toEqual(
      records.map((_, index) => `${index}`),
    );
  });

  suite.test(
    'E2',
    'terminal precedence: done supersedes an error, stream_end never changes the state, done seals',
    async (env) => {
      const { store } = await env.openStore();
      const session = await store.create({ id: env.id() });
      const run = await store.beginRun(session.id, { userMessage: userInput('go') });
      const summary = () => store.runSummary(session.id, run.runId);
      await run.append({ type: 'error', data: { message: 'transient' } });
      expect((await summary()).terminalState).toBe('errored');
      await run.append({ type: 'error', data: { message: 'again' } });
      expect((await summary()).terminalState).toBe('errored');
      await run.append({ type: 'done' });
      expect((await summary()).terminalState).toBe('completed');
      await run.append({ type: 'stream_end' });
      const sealed = await summary();
      expect(sealed).toMatchObject({ terminalState: 'completed', lastSequence: 4, exists: true });
      await expectTypedError(
        run.append({ type: 'token', data: { text: 'late' } }),
        JournalSealedError,
      );
      await expectTypedError(
        run.append({ type: 'error', data: { message: 'late' } }),
        JournalSealedError,
      );
      expect((await summary()).lastSequence).toBe(4);
    },
  );

  suite.test(
    'E2',
    'a run summary is never staler than the journal, in any instance',
    async (env) => {
      const { store } = await env.openStore();
      const other = await env.openStore();
      const session = await store.create({ id: env.id() });
      const run = await store.beginRun(session.id, { userMessage: userInput('go') });
      for (let index = 1; index <= 5; index++) {
        const record = await run.append({
          type: index === 5 ? 'done' : 'token',
          data: { text: `${index}` },
        });
        for (const reader of [store, other.store]) {
          const summary = await reader.runSummary(session.id, run.runId);
          expect(summary.lastSequence).toBe(record.sequence);
          expect(summary.terminalState).toBe(index === 5 ? 'completed' : null);
        }
      }
    },
  );

  suite.test('E2', 'reads take a cursor and an optional upper bound', async (env) => {
    const { store } = await env.openStore();
    const session = await store.create({ id: env.id() });
    const run = await store.beginRun(session.id, { userMessage: userInput('go') });
    for (let index = 1; index <= 6; index++)
      await run.append({ type: 'token', data: { text: `${index}` } });
    const sequences = async (options: {
      afterSequence?: number;
      upToSequence?: number;
      limit?: number;
    }) =>
      (await store.readJournal(session.id, run.runId, options)).records.map(
        (record) => record.sequence,
      );
    expect(await sequences({ afterSequence: 2, upToSequence: 4 })).toEqual([3, 4]);
    expect(await sequences({ afterSequence: 4 })).toEqual([5, 6]);
    expect(await sequences({ afterSequence: 2, limit: 1 })).toEqual([3]);
    expect(await sequences({ upToSequence: 2 })).toEqual([1, 2]);
    expect(await sequences({ afterSequence: 6 })).toEqual([]);
  });

  const expectations: Record<
    JournalDurabilityPolicy,
    (type: string, durability: string) => boolean
  > = {
    terminal: (type, durability) =>
      type === 'done' ? durability !== 'none' : durability === 'none',
    group: (_type, durability) => durability !== 'none',
    each: (_type, durability) => durability === 'each',
  };
  for (const policy of ['terminal', 'group', 'each'] as const) {
    suite.test(
      'E2',
      `durability policy "${policy}" decides which appends are made durable`,
      async (env) => {
        const opened = await env.openStore({ journal: { durability: policy } });
        const session = await opened.store.create({ id: env.id() });
        const run = await opened.store.beginRun(session.id, { userMessage: userInput('go') });
        opened.adapter.clearCalls();
        await run.append({ type: 'token', data: { text: 'a' } });
        await run.append({ type: 'tool', data: { name: 'search', toolCallId: 't1' } });
        await run.append({ type: 'done' });
        const appends = opened.adapter.callsTo('appendLog').map((call) => {
          const records = call.args[2] as Array<{ text: string }>;
          const type = (JSON.parse(records[0]!.text) as JournalRecord).type;
          return [type, (call.args[3] as { durability: string }).durability] as const;
        });
        expect(appends.map(([type]) => type)).toEqual(['token', 'tool', 'done']);
        for (const [type, durability] of appends) {
          expect(
            expectations[policy](type, durability),
            `${type} appended with ${durability}`,
          ).toBe(true);
        }
      },
    );
  }

  suite.test('E2:restart', 'durable appends survive a crash', async (env) => {
    const opened = await env.openStore({ journal: { durability: 'each' } });
    const session = await opened.store.create({ id: env.id() });
    const run = await opened.store.beginRun(session.id, { userMessage: userInput('go') });
    for (const text of ['one', 'two', 'three']) await run.append({ type: 'token', data: { text } });
    const reopened = await env.restartAfterCrash(opened);
    const journal = await reopened.store.readJournal(session.id, run.runId);
    expect(journal.records.map((record) => record.data.text)).toEqual(['one', 'two', 'three']);
    expect((await reopened.store.runSummary(session.id, run.runId)).lastSequence).toBe(3);
  });

  suite.test(
    'E2',
    'a stored record whose identity does not match its journal is rejected, not used',
    async (env) => {
      const { store } = await env.openStore();
      const session = await store.create({ id: env.id() });
      const raw = await env.rawAdapter();
      const record = (sequence: number, overrides: Partial<JournalRecord>) =>
        JSON.stringify({
          sessionId: session.id,
          runId: 'run-x',
          sequence,
          eventId: `e${sequence}`,
          type: 'token',
          data: { text: `${sequence}` },
          at: env.clock.now(),
          ...overrides,
        });
      const planted = await raw.appendLog(
        session.id,
        'run-x',
        [
          { sequence: 1, text: record(1, {}) },
          { sequence: 2, text: record(2, { runId: 'run-y' }) },
          { sequence: 3, text: record(3, {}) },
        ],
        { durability: 'each' },
      );
      expect(planted.ok).toBe(true);
      const journal = await store.readJournal(session.id, 'run-x');
      // Skipped and reported, and the read goes on past it (E3: one damaged record never
      // hides the ones after it).
      expect(journal.records.map((entry) => entry.sequence)).toEqual([1, 3]);
      expect(journal.invalidRecord).toEqual({ sequence: 2 });
      expect(journal.invalidRecords).toEqual([{ sequence: 2, reason: expect.any(String) }]);
      expect(journal.lastSequence).toBe(3);
    },
  );

  // A record torn by a crash mid-append is adapter-physical (framing, checksums): adapter
  // packages test its detection and repair. Here: what the store does with what the
  // adapter reports.
  suite.test(
    'E3',
    'a torn tail reported by the adapter is surfaced, ignored, and appends go on',
    async (env) => {
      const opened = await env.openStore();
      const session = await opened.store.create({ id: env.id() });
      const run = await opened.store.beginRun(session.id, { userMessage: userInput('go') });
      await run.append({ type: 'token', data: { text: 'kept' } });
      const remove = opened.adapter.inject({
        method: 'readLog',
        replace: async (_args, real) => ({ ...((await real()) as LogReadResult), tornTail: true }),
      });
      const journal = await opened.store.readJournal(session.id, run.runId);
      remove();
      expect(journal.tornTail).toBe(true);
      expect(journal.records.map((record) => record.data.text)).toEqual(['kept']);
      expect((await run.append({ type: 'token', data: { text: 'next' } })).sequence).toBe(2);
    },
  );

  suite.test('E3', 'a gap in sequence numbers is reported, not papered over', async (env) => {
    const opened = await env.openStore();
    const session = await opened.store.create({ id: env.id() });
    const run = await opened.store.beginRun(session.id, { userMessage: userInput('go') });
    for (const text of ['1', '2', '3']) await run.append({ type: 'token', data: { text } });
    opened.adapter.inject({
      method: 'readLog',
      replace: async (_args, real) => {
        const result = (await real()) as LogReadResult;
        return { ...result, records: result.records.filter((record) => record.sequence !== 2) };
      },
    });
    const journal = await opened.store.readJournal(session.id, run.runId);
    expect(journal.records.map((record) => record.sequence)).toEqual([1, 3]);
    expect(journal.gap).toEqual({ expected: 2, found: 3 });
    expect(journal.gaps).toEqual([{ expected: 2, found: 3 }]);
  });

  suite.test(
    'E3',
    'the adapter refuses an append that is not exactly the next sequence',
    async (env) => {
      const raw = await env.rawAdapter();
      const sessionId = env.id();
      const text = (sequence: number) => JSON.stringify({ sequence });
      expect(
        await raw.appendLog(sessionId, 'r', [{ sequence: 2, text: text(2) }], {
          durability: 'each',
        }),
      ).toEqual({ ok: false, lastSequence: 0 });
      expect(
        (
          await raw.appendLog(sessionId, 'r', [{ sequence: 1, text: text(1) }], {
            durability: 'each',
          })
        ).ok,
      ).toBe(true);
      expect(
        await raw.appendLog(sessionId, 'r', [{ sequence: 3, text: text(3) }], {
          durability: 'none',
        }),
      ).toEqual({ ok: false, lastSequence: 1 });
      expect(
        await raw.appendLog(sessionId, 'r', [{ sequence: 1, text: text(1) }], {
          durability: 'group',
        }),
      ).toEqual({ ok: false, lastSequence: 1 });
      const read = await raw.readLog(sessionId, 'r', { afterSequence: 0, limit: 10 });
      expect(read.records.map((record) => record.sequence)).toEqual([1]);
    },
  );
}

function defineCheckpointTests(suite: SpecRegistrar): void {
  suite.test(
    'E4',
    'a checkpoint saves with skipIndex only when the activity counter advanced',
    async (env) => {
      const opened = await env.openStore(CHECKPOINT);
      const session = await opened.store.create({ id: env.id() });
      const run = await opened.store.beginRun(session.id, { userMessage: userInput('long task') });
      opened.adapter.clearCalls();
      await env.clock.advance(100);
      await env.clock.advance(100);
      await drainCallbacks();
      expect(sessionWrites(opened, session.id), 'no activity, no checkpoint').toEqual([]);

      const first = checkpointEvent(opened, session.id);
      run.recordActivity();
      await env.clock.advance(100);
      await first;
      expect(sessionWrites(opened, session.id)).toHaveLength(1);
      expect(opened.adapter.indexUpdates()).toEqual([]);

      await env.clock.advance(100);
      await drainCallbacks();
      expect(
        sessionWrites(opened, session.id),
        'counter unchanged since the checkpoint',
      ).toHaveLength(1);

      // A tool completion counts as activity by itself.
      const second = checkpointEvent(opened, session.id);
      await run.append({ type: 'tool', data: { name: 'search', toolCallId: 't1' } });
      await run.append({ type: 'tool_result', data: { toolCallId: 't1', result: 'ok' } });
      await env.clock.advance(100);
      await second;
      expect(sessionWrites(opened, session.id)).toHaveLength(2);
      expect(opened.adapter.indexUpdates()).toEqual([]);
      // The checkpoint saves the session as it is; it never invents messages.
      const persisted = await readPersistedSession(opened.adapter.inner, session.id);
      expect(persisted!.session.messages).toEqual([]);
      expect(persisted!.session.pending?.streamId).toBe(run.streamId);
    },
  );

  suite.test('E4', 'an idle refresh is written when due, refreshing the heartbeat', async (env) => {
    const opened = await env.openStore(CHECKPOINT);
    const session = await opened.store.create({ id: env.id() });
    const run = await opened.store.beginRun(session.id, { userMessage: userInput('long task') });
    expect(run.active).toBe(true);
    const refreshed = checkpointEvent(opened, session.id);
    await env.clock.advance(1000);
    await refreshed;
    const persisted = await readPersistedSession(opened.adapter.inner, session.id);
    const pending = persisted!.session.pending!;
    expect(pending.heartbeatAt).toBeGreaterThanOrEqual(pending.startedAt + 1000);
  });

  suite.test('E4', 'a checkpoint holds the session lock while it saves', async (env) => {
    const opened = await env.openStore(CHECKPOINT);
    const session = await opened.store.create({ id: env.id() });
    const run = await opened.store.beginRun(session.id, { userMessage: userInput('long task') });
    opened.adapter.clearCalls();
    const acquired = deferred();
    const release = deferred();
    const held = opened.store.withLock(session.id, async () => {
      acquired.resolve();
      await release.promise;
    });
    await acquired.promise;
    run.recordActivity();
    const checkpointed = checkpointEvent(opened, session.id);
    await env.clock.advance(100);
    await env.clock.advance(100);
    await drainCallbacks();
    expect(sessionWrites(opened, session.id), 'no checkpoint while the lock is held').toEqual([]);
    release.resolve();
    await held;
    await env.clock.advance(100);
    await checkpointed;
    expect(sessionWrites(opened, session.id)).toHaveLength(1);
  });

  suite.test(
    'E4',
    'stopping the checkpoint (complete) awaits one in flight, and none fires after',
    async (env) => {
      const opened = await env.openStore(CHECKPOINT);
      const session = await opened.store.create({ id: env.id() });
      const run = await opened.store.beginRun(session.id, { userMessage: userInput('long task') });
      opened.adapter.clearCalls();
      const checkpoint = holdNextSessionWrite(opened.adapter, session.id);
      run.recordActivity();
      await env.clock.advance(100);
      await checkpoint.entered;
      const completing = run.complete({
        assistantMessages: [{ role: 'assistant', content: 'done' }],
      });
      await drainCallbacks();
      expect(sessionWrites(opened, session.id), 'complete waits for the checkpoint').toHaveLength(
        1,
      );
      checkpoint.release();
      await completing;
      const [checkpointWrite, ...later] = sessionWrites(opened, session.id);
      expect(later.length).toBeGreaterThan(0);
      for (const call of later) expect(call.startedAt).toBeGreaterThan(checkpointWrite!.settledAt!);
      const callsAfter = opened.adapter.calls.length;
      run.recordActivity();
      await env.clock.advance(5000);
      expect(opened.adapter.calls.length).toBe(callsAfter);
    },
  );

  suite.test(
    'E4',
    'a checkpoint racing an undo persists only whole states, never a mix',
    async (env) => {
      const opened = await env.openStore(CHECKPOINT);
      const { store } = opened;
      const initial = ['first', 'reply 1', 'second', 'reply 2', 'third', 'reply 3'];
      const session = await store.create({
        id: env.id(),
        messages: initial.map((text, index) =>
          textMessage(env, index % 2 ? 'assistant' : 'user', text),
        ),
      });
      const run = await store.beginRun(session.id, { userMessage: userInput('working') });
      const snapshots = captureSnapshots(opened, session.id);
      const allowed: string[][] = [contentsOf(session)];
      for (let round = 0; round < 3; round++) {
        run.recordActivity();
        const undo = store.withLock(session.id, async () => {
          session.messages.splice(-2, 2);
          allowed.push(contentsOf(session));
          await store.save(session, { allowShrink: true });
          session.messages.push(
            textMessage(env, 'user', `msg-${round}`),
            textMessage(env, 'assistant', `ans-${round}`),
          );
          allowed.push(contentsOf(session));
          await store.save(session);
        });
        await env.clock.advance(100);
        await undo;
        await env.clock.advance(100);
      }
      await run.complete({ assistantMessages: [{ role: 'assistant', content: 'finished' }] });
      expect(snapshots.length).toBeGreaterThan(6);
      for (const snapshot of snapshots.slice(0, -1)) {
        const contents = contentsOf(snapshot.session);
        expect(allowed, `persisted ${JSON.stringify(contents)}`).toContainEqual(contents);
      }
    },
  );
}

function defineEndingTests(suite: SpecRegistrar): void {
  suite.test(
    'E5',
    'complete writes the answer, clears the pending turn, updates the index, seals the journal and marks the turn',
    async (env) => {
      const opened = await env.openStore(CHECKPOINT);
      const { store } = opened;
      const session = await store.create({
        id: env.id(),
        messages: [textMessage(env, 'user', 'earlier')],
      });
      const run = await store.beginRun(session.id, { userMessage: userInput('question') });
      await run.append({ type: 'reasoning', data: { text: 'hmm' } });
      await run.append({ type: 'token', data: { text: 'Hel' } });
      await run.append({ type: 'token', data: { text: 'lo' } });
      opened.adapter.clearCalls();
      const completed = await run.complete();
      expect(run.active).toBe(false);
      expect(store.activeRun(session.id)).toBeNull();
      expect(contentsOf(completed)).toEqual(['earlier', 'question', 'Hello']);
      expect(completed.messages[2]!.reasoning).toBe('hmm');
      expect(completed.pending).toBeNull();
      expect(opened.adapter.indexUpdates().length).toBeGreaterThan(0);
      const summary = (await store.list({ limit: 1000 })).sessions.find(
        (entry) => entry.id === session.id,
      );
      expect(summary).toMatchObject({ messageCount: 3, pending: false });
      expect((await store.runSummary(session.id, run.runId)).terminalState).toBe('completed');
      await expectTypedError(
        run.append({ type: 'token', data: { text: 'late' } }),
        JournalSealedError,
      );
      expect(await store.lifecycle.hasUncommittedWork(session.id)).toBe(true);
      const reopened = await env.restartAfterCrash(opened);
      const loaded = await reopened.store.load(session.id);
      expect(contentsOf(loaded)).toEqual(['earlier', 'question', 'Hello']);
      expect(loaded.pending).toBeNull();
    },
  );

  suite.test('E5', 'complete writes the assistant messages it is given', async (env) => {
    const { store } = await env.openStore();
    const session = await store.create({ id: env.id() });
    const run = await store.beginRun(session.id, { userMessage: userInput('question') });
    await run.append({ type: 'token', data: { text: 'streamed draft' } });
    const completed = await run.complete({
      assistantMessages: [
        { role: 'assistant', content: 'final answer', extra: 1 },
        { role: 'assistant', content: 'follow-up' },
      ],
    });
    expect(contentsOf(completed)).toEqual(['question', 'final answer', 'follow-up']);
    expect(completed.messages[1]).toMatchObject({ extra: 1 });
  });

  suite.test(
    'E6',
    'cancel keeps the user turn and the partial output, adds one cancel marker and clears the pending turn, durably',
    async (env) => {
      const opened = await env.openStore();
      const session = await opened.store.create({ id: env.id() }, { fsync: true });
      const run = await opened.store.beginRun(session.id, { userMessage: userInput('question') });
      await run.append({ type: 'token', data: { text: 'partial ' } });
      await run.append({ type: 'token', data: { text: 'output' } });
      const outcome = await run.cancel();
      expect(outcome).toEqual({ cancelled: true, sessionId: session.id, runId: run.runId });
      expect(await run.cancel()).toMatchObject({ cancelled: false });
      expect(await opened.store.cancelRun(session.id)).toMatchObject({ cancelled: false });
      expect((await opened.store.runSummary(session.id, run.runId)).terminalState).toBe(
        'interrupted-by-user',
      );
      const reopened = await env.restartAfterCrash(opened);
      const loaded = await reopened.store.load(session.id);
      expect(loaded.pending).toBeNull();
      const [user, partial, marker, ...rest] = loaded.messages as Message[];
      expect(rest).toEqual([]);
      expect(user).toMatchObject({ role: 'user', content: 'question' });
      expect(partial).toMatchObject({
        role: 'assistant',
        content: 'partial output',
        partial: true,
      });
      expect(marker!.marker).toMatchObject({ type: 'cancelled', runId: run.runId });
    },
  );

  suite.test(
    'E6',
    'cancelling a finished or foreign run changes nothing and says so',
    async (env) => {
      const opened = await env.openStore();
      const { store, adapter } = opened;
      const idle = await store.create({ id: env.id() });
      const busy = await store.create({ id: env.id() });
      const run = await store.beginRun(busy.id, { userMessage: userInput('working') });
      const finished = await store.create({ id: env.id() });
      const done = await store.beginRun(finished.id, { userMessage: userInput('quick') });
      await done.complete({ assistantMessages: [{ role: 'assistant', content: 'answer' }] });
      adapter.clearCalls();
      expect(await store.cancelRun(idle.id)).toEqual({
        cancelled: false,
        reason: 'no-pending-turn',
      });
      expect(await store.cancelRun(busy.id, 'someone-else')).toEqual({
        cancelled: false,
        reason: 'not-active',
      });
      expect(await done.cancel()).toEqual({ cancelled: false, reason: 'already-finished' });
      expect(await store.cancelRun(finished.id, done.runId)).toMatchObject({ cancelled: false });
      expect(adapter.callsTo('putDocument')).toEqual([]);
      expect(run.active).toBe(true);
    },
  );

  suite.test(
    'E6',
    'fail keeps the user turn and output, adds one error marker, ends errored',
    async (env) => {
      const opened = await env.openStore();
      const session = await opened.store.create({ id: env.id() });
      const run = await opened.store.beginRun(session.id, { userMessage: userInput('question') });
      await run.append({ type: 'token', data: { text: 'so far' } });
      expect(await run.fail({ message: 'model overloaded', code: 'overloaded' })).toMatchObject({
        cancelled: true,
      });
      expect(await run.fail({ message: 'again' })).toMatchObject({ cancelled: false });
      expect((await opened.store.runSummary(session.id, run.runId)).terminalState).toBe('errored');
      const reopened = await env.restartAfterCrash(opened);
      const loaded = await reopened.store.load(session.id);
      expect(loaded.pending).toBeNull();
      expect(contentsOf(loaded).slice(0, 2)).toEqual(['question', 'so far']);
      expect(loaded.messages.filter((message) => message.marker?.type === 'errored')).toHaveLength(
        1,
      );
      expect(loaded.messages).toHaveLength(3);
    },
  );

  suite.test(
    'E6',
    'two concurrent cancels, from this and another instance, leave exactly one cancel marker',
    async (env) => {
      const worker = await env.openStore();
      const session = await worker.store.create({ id: env.id() }, { fsync: true });
      const run = await worker.store.beginRun(session.id, { userMessage: userInput('question') });
      await run.append({ type: 'token', data: { text: 'partial' } });
      const other = await env.openStore();
      const outcomes = await Promise.allSettled([run.cancel(), other.store.cancelRun(session.id)]);
      const cancelled = outcomes.filter(
        (outcome) => outcome.status === 'fulfilled' && outcome.value.cancelled,
      );
      expect(cancelled.length).toBeGreaterThanOrEqual(1);
      const reader = await env.openStore();
      const stored = await reader.store.load(session.id);
      expect(stored.pending).toBeNull();
      expect(
        stored.messages.filter((message) => message.marker?.type === 'cancelled'),
      ).toHaveLength(1);
      expect(contentsOf(stored).filter((content) => content === 'question')).toHaveLength(1);
      expect(contentsOf(stored).filter((content) => content === 'partial')).toHaveLength(1);
    },
  );

  suite.test(
    'E6',
    'a cancel whose write meets edits of another instance re-reads and tries again, as complete does',
    async (env) => {
      const { worker, session, run } = await runWithPartialOutput(env);
      const editor = await env.openStore();
      const edits = editBeforeEachWrite(worker, editor, session.id, 3);
      const outcome = await run.cancel();
      expect(outcome).toEqual({ cancelled: true, sessionId: session.id, runId: run.runId });
      expect(edits()).toBe(3);
      await expectCancelledOnce(env, session.id, 3);
    },
  );

  suite.test(
    'E6',
    'cancelRun from another instance whose write meets an edit re-reads and tries again',
    async (env) => {
      const { session, run } = await runWithPartialOutput(env);
      const canceller = await env.openStore();
      const editor = await env.openStore();
      const edits = editBeforeEachWrite(canceller, editor, session.id, 2);
      const outcome = await canceller.store.cancelRun(session.id);
      expect(outcome).toEqual({ cancelled: true, sessionId: session.id, runId: run.runId });
      expect(edits()).toBe(2);
      await expectCancelledOnce(env, session.id, 2);
    },
  );

  suite.test(
    'E6',
    'a complete racing a cancel from another instance ends one way only: answered or cancelled',
    async (env) => {
      for (let round = 0; round < 3; round++) {
        const worker = await env.openStore();
        const session = await worker.store.create({ id: env.id() }, { fsync: true });
        const run = await worker.store.beginRun(session.id, { userMessage: userInput('question') });
        await run.append({ type: 'token', data: { text: 'draft' } });
        const other = await env.openStore();
        const racers: Array<Promise<unknown>> = [
          run.complete({ assistantMessages: [{ role: 'assistant', content: 'final answer' }] }),
          other.store.cancelRun(session.id),
        ];
        if (round === 1) racers.reverse();
        await Promise.allSettled(racers);
        const reader = await env.openStore();
        const stored = await reader.store.load(session.id);
        const contents = contentsOf(stored);
        const markers = stored.messages.filter((message) => message.marker !== undefined);
        expect(stored.pending).toBeNull();
        expect(contents.filter((content) => content === 'question')).toHaveLength(1);
        if (contents.includes('final answer')) {
          expect(markers, JSON.stringify(contents)).toEqual([]);
        } else {
          expect(
            markers.map((message) => message.marker!.type),
            JSON.stringify(contents),
          ).toEqual(['cancelled']);
        }
      }
    },
  );

  suite.test(
    'E6',
    'a checkpoint racing a cancel never persists a half-cleared pending turn',
    async (env) => {
      for (let startAfter = 0; startAfter < 4; startAfter++) {
        const opened = await env.openStore({ checkpoint: { intervalMs: 10, idleRefreshMs: 20 } });
        const { store } = opened;
        const session = await store.create({
          id: env.id(),
          messages: [textMessage(env, 'user', 'hello'), textMessage(env, 'assistant', 'world')],
        });
        const run = await store.beginRun(session.id, { userMessage: userInput('question') });
        await run.append({ type: 'token', data: { text: 'partial' } });
        const snapshots = captureSnapshots(opened, session.id);
        let cancelling: Promise<unknown> | null = null;
        for (let tick = 0; tick < 8; tick++) {
          run.recordActivity();
          if (tick === startAfter) cancelling = store.cancelRun(session.id);
          await env.clock.advance(10);
        }
        expect(await cancelling).toMatchObject({ cancelled: true });
        expect(snapshots.length).toBeGreaterThan(0);
        for (const { session: persisted } of snapshots) {
          const contents = contentsOf(persisted);
          const pending = persisted.pending;
          if (pending !== null) {
            expect(pending.streamId).toBe(run.streamId);
            expect(pending.userMessage.content).toBe('question');
            expect(contents).toEqual(['hello', 'world']);
          } else {
            expect(contents.slice(0, 4)).toEqual(['hello', 'world', 'question', 'partial']);
            expect(contents).toHaveLength(5);
            const markers = persisted.messages.filter(
              (message) => message.marker?.type === 'cancelled',
            );
            expect(markers).toHaveLength(1);
          }
        }
        expect(snapshots.at(-1)!.session.pending).toBeNull();
        await env.closeStore(opened);
      }
    },
  );
}

/** A session with a run in flight that streamed "partial", on a store of its own. */
async function runWithPartialOutput(env: TestEnvironment) {
  const worker = await env.openStore();
  const session = await worker.store.create({ id: env.id() }, { fsync: true });
  const run = await worker.store.beginRun(session.id, { userMessage: userInput('question') });
  await run.append({ type: 'token', data: { text: 'partial' } });
  return { worker, session, run };
}

/**
 * Fault injection: just before each of `writer`'s next `times` writes of the session,
 * another instance (`editor`) edits its title, so each of those writes meets a newer
 * revision. Returns how many edits were made.
 */
function editBeforeEachWrite(
  writer: OpenedStore,
  editor: OpenedStore,
  sessionId: string,
  times: number,
): () => number {
  let edits = 0;
  writer.adapter.inject({
    method: 'putDocument',
    match: (args) => args[0] === 'sessions' && args[1] === sessionId,
    times,
    replace: async (_args, real) => {
      const edited = await editor.store.load(sessionId, { refresh: true });
      edits++;
      edited.title = `edited ${edits}`;
      await editor.store.save(edited);
      return real();
    },
  });
  return () => edits;
}

/** The turn ended once: no pending turn, one cancel marker, the output kept once. */
async function expectCancelledOnce(
  env: TestEnvironment,
  sessionId: string,
  edits: number,
): Promise<void> {
  const stored = await (await env.openStore()).store.load(sessionId);
  expect(stored.title).toBe(`edited ${edits}`);
  expect(stored.pending).toBeNull();
  expect(stored.messages.filter((message) => message.marker?.type === 'cancelled')).toHaveLength(1);
  expect(contentsOf(stored).filter((content) => content === 'partial')).toHaveLength(1);
}
