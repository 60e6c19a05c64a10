/**
 * C1–C5: flushAll, close() and the shutdown helper, what a restart sees, the bounded
 * cache, refusing new work while closing.
 *
 * One file per contract area, so docs/contract.md links each clause to its tests; that
 * is why these files are longer than the house's usual ~300 lines.
 */
import {
  BackendError,
  type CloseReport,
  CorruptDocumentError,
  installShutdownHooks,
  type MemoryAgent,
  type MemoryCommitContext,
  NotFoundError,
  RevisionConflictError,
  type Session,
  type SessionStore,
  StoreClosedError,
} from '@keepsake/core';
import { expect } from 'vitest';
import type { OpenedStore, TestEnvironment } from '../harness/environment.js';
import {
  captureError,
  contentsOf,
  deferred,
  drainCallbacks,
  expectTypedError,
  settlesPromptly,
  textMessage,
  userInput,
} from '../harness/fixtures.js';
import { collectGarbage } from '../harness/garbage-collection.js';
import { holdNextSessionWrite } from '../harness/held-adapter-call.js';
import { readPersistedSession } from '../harness/persisted-document.js';
import type { SpecRegistrar } from '../harness/suite.js';
import { definePowerLossTests } from './c-power-loss.js';

function sessionReads(opened: OpenedStore, id: string): number {
  return opened.adapter
    .callsTo('getDocument')
    .filter((call) => call.args[0] === 'sessions' && call.args[1] === id).length;
}

/** Sessions saved with fsync, so a crash can only take what a test changes later. */
async function createSessions(env: TestEnvironment, store: SessionStore, count: number) {
  const sessions: Session[] = [];
  for (let index = 0; index < count; index++) {
    sessions.push(
      await store.create(
        {
          id: env.id(),
          title: `s${index}`,
          messages: [textMessage(env, 'user', `hello ${index}`)],
        },
        { fsync: true },
      ),
    );
    await env.clock.advance(10);
  }
  return sessions;
}

export function defineFlushAndShutdown(suite: SpecRegistrar): void {
  defineFlushTests(suite);
  defineCleanFlushTests(suite);
  defineCloseTests(suite);
  defineRestartTests(suite);
  definePowerLossTests(suite);
  defineCacheTests(suite);
}

function defineFlushTests(suite: SpecRegistrar): void {
  suite.test('C1', 'flushAll on a store holding nothing reports zero', async (env) => {
    const { store } = await env.openStore();
    expect(await store.flushAll()).toEqual({ flushed: 0, failed: [] });
  });

  suite.test(
    'C1',
    'flushAll re-persists every session held in memory, unsaved changes included, durably',
    async (env) => {
      const opened = await env.openStore();
      const { store, adapter } = opened;
      const sessions = await createSessions(env, store, 3);
      sessions[0]!.title = 'unsaved title';
      sessions[1]!.messages.push(textMessage(env, 'assistant', 'unsaved message'));
      adapter.clearCalls();
      const report = await store.flushAll();
      expect(report).toEqual({ flushed: 3, failed: [] });
      const durablyWritten = new Set(
        adapter
          .callsTo('putDocument')
          .filter(
            (call) => call.args[0] === 'sessions' && (call.args[3] as { durable: boolean }).durable,
          )
          .map((call) => call.args[1]),
      );
      expect(durablyWritten.has(sessions[0]!.id) && durablyWritten.has(sessions[1]!.id)).toBe(true);
      expect(
        adapter.callsTo('sync').length > 0 ||
          sessions.every((session) => durablyWritten.has(session.id)),
        'every session made durable (a durable write, or a sync after the writes)',
      ).toBe(true);
      const reopened = await env.restartAfterCrash(opened);
      expect((await reopened.store.load(sessions[0]!.id)).title).toBe('unsaved title');
      expect(contentsOf(await reopened.store.load(sessions[1]!.id))).toEqual([
        'hello 1',
        'unsaved message',
      ]);
      expect(contentsOf(await reopened.store.load(sessions[2]!.id))).toEqual(['hello 2']);
    },
  );

  suite.test(
    'C1',
    'one failing session does not stop the others; the report names it with a typed error',
    async (env) => {
      const opened = await env.openStore();
      const { store, adapter } = opened;
      const sessions = await createSessions(env, store, 3);
      for (const session of sessions) session.title = `${session.title} (unsaved)`;
      const failing = sessions[1]!;
      // Fault injection: the backend refuses every write of one session.
      adapter.inject({
        method: 'putDocument',
        match: ([collection, id]) => collection === 'sessions' && id === failing.id,
        error: () => new BackendError(adapter.name, 'write a session (disk on fire)'),
      });
      const report = await store.flushAll();
      expect(report.flushed).toBe(2);
      expect(report.failed.map((failure) => failure.sessionId)).toEqual([failing.id]);
      expect(BackendError.isInstance(report.failed[0]!.error)).toBe(true);
      const reopened = await env.restartAfterCrash(opened);
      for (const session of sessions) {
        const loaded = await reopened.store.load(session.id);
        expect(loaded.title.endsWith('(unsaved)')).toBe(session !== failing);
      }
    },
  );
}

function defineCleanFlushTests(suite: SpecRegistrar): void {
  suite.test(
    'C1',
    "flushAll of an instance that only read a session rewrites it at its stored revision: another instance's next save does not conflict",
    async (env) => {
      const writer = await env.openStore();
      const [session] = await createSessions(env, writer.store, 1);
      const revision = session!.revision;
      const reader = await env.openStore();
      const readOnly = await reader.store.load(session!.id);
      const other = await env.openStore();
      const held = await other.store.load(session!.id);
      reader.adapter.clearCalls();
      expect(await reader.store.flushAll()).toEqual({ flushed: 1, failed: [] });
      const writes = reader.adapter
        .callsTo('putDocument')
        .filter((call) => call.args[0] === 'sessions' && call.args[1] === session!.id);
      for (const write of writes) {
        expect(write.args[2], 'rewritten at its stored revision').toMatchObject({ revision });
        expect(write.args[3]).toMatchObject({ expectedRevision: revision });
      }
      expect(
        writes.some((write) => (write.args[3] as { durable: boolean }).durable) ||
          reader.adapter.callsTo('sync').length > 0,
        're-persisted durably (a durable write, or a sync)',
      ).toBe(true);
      expect(readOnly.revision).toBe(revision);
      const persisted = await readPersistedSession(await env.rawAdapter(), session!.id);
      expect(persisted!.revision).toBe(revision);
      expect(persisted!.session.updatedAt, 'a flush is not an edit').toBe(session!.updatedAt);

      held.messages.push(textMessage(env, 'assistant', 'saved after the flush'));
      const saved = await other.store.save(held, { fsync: true });
      expect(saved.revision).toBe(revision + 1);
      const fresh = await env.openStore();
      expect(contentsOf(await fresh.store.load(session!.id))).toEqual([
        'hello 0',
        'saved after the flush',
      ]);
    },
  );

  suite.test(
    'C1',
    'flushAll never overwrites a newer revision another instance wrote: a clean session is no failure, an edited one is a conflict',
    async (env) => {
      const writer = await env.openStore();
      const [clean, edited] = await createSessions(env, writer.store, 2);
      const reader = await env.openStore();
      await reader.store.load(clean!.id);
      const readerEdited = await reader.store.load(edited!.id);
      readerEdited.title = 'stale edit';
      const other = await env.openStore();
      for (const id of [clean!.id, edited!.id]) {
        const newer = await other.store.load(id);
        newer.messages.push(textMessage(env, 'assistant', 'newer revision'));
        await other.store.save(newer, { fsync: true });
      }
      const report = await reader.store.flushAll();
      expect(report.failed.map((failure) => failure.sessionId)).toEqual([edited!.id]);
      expect(RevisionConflictError.isInstance(report.failed[0]!.error)).toBe(true);
      const fresh = await env.openStore();
      for (const session of [clean!, edited!]) {
        const loaded = await fresh.store.load(session.id);
        expect(loaded.revision).toBe(session.revision + 1);
        expect(loaded.title).toBe(session.title);
        expect(contentsOf(loaded).at(-1)).toBe('newer revision');
      }
    },
  );
}

/** A memory provider whose commits can be held open (`gate`) to model a slow extraction. */
class GatedAgent implements MemoryAgent {
  readonly contexts: MemoryCommitContext[] = [];
  readonly entered = deferred();
  gate: Promise<void> | null = null;
  commitMemory = async (context: MemoryCommitContext): Promise<void> => {
    this.contexts.push(context);
    this.entered.resolve();
    if (this.gate !== null) await this.gate;
  };
}

function defineCloseTests(suite: SpecRegistrar): void {
  suite.test(
    'C2',
    'close() drains memory commits, then flushes, then closes the adapter; it is idempotent',
    async (env) => {
      const opened = await env.openStore();
      const { store, adapter } = opened;
      const [session] = await createSessions(env, store, 1);
      const agent = new GatedAgent();
      let callsAtCommit = -1;
      agent.commitMemory = async (context) => {
        agent.contexts.push(context);
        callsAtCommit = adapter.calls.length;
      };
      store.lifecycle.registerAgent(session!.id, agent);
      await store.lifecycle.markTurnCompleted(session!.id);
      session!.title = 'unsaved at shutdown';
      const [first, second] = await Promise.all([store.close(), store.close()]);
      const third = await store.close();
      expect(store.closed).toBe(true);
      expect(agent.contexts).toHaveLength(1);
      expect(first.lifecycle.committed).toContain(session!.id);
      expect(first.flush.failed).toEqual([]);
      expect(first.flush.flushed).toBeGreaterThanOrEqual(1);
      expect(second).toEqual(first);
      expect(third).toEqual(first);
      const calls = adapter.calls;
      const closeCalls = calls.filter((call) => call.method === 'close');
      expect(closeCalls).toHaveLength(1);
      expect(calls.at(-1)!.method).toBe('close');
      const flushWrite = calls.findIndex(
        (call, index) =>
          index >= callsAtCommit && call.method === 'putDocument' && call.args[1] === session!.id,
      );
      expect(callsAtCommit, 'the memory commit ran').toBeGreaterThanOrEqual(0);
      expect(flushWrite, 'the flush wrote the session after the commit').toBeGreaterThanOrEqual(0);
      const reopened = await env.openStore();
      expect((await reopened.store.load(session!.id)).title).toBe('unsaved at shutdown');
      expect(await reopened.store.lifecycle.hasUncommittedWork(session!.id)).toBe(false);
    },
  );

  suite.test(
    'C2',
    'close() stops checkpoints, awaiting one in flight, and nothing fires after it',
    async (env) => {
      const { store, adapter } = await env.openStore({
        checkpoint: { intervalMs: 100, idleRefreshMs: 100_000 },
      });
      const [session] = await createSessions(env, store, 1);
      const run = await store.beginRun(session!.id, { userMessage: userInput('long task') });
      const checkpoint = holdNextSessionWrite(adapter, session!.id);
      run.recordActivity();
      await env.clock.advance(100);
      await checkpoint.entered;
      const closing = store.close();
      expect(await settlesPromptly(closing), 'close() must wait for the checkpoint in flight').toBe(
        false,
      );
      checkpoint.release();
      await closing;
      const writes = adapter.callsTo('putDocument').filter((call) => call.args[1] === session!.id);
      const checkpointWrite = writes[0]!;
      expect(checkpointWrite.settledAt).not.toBeNull();
      for (const later of writes.slice(1)) {
        expect(later.startedAt).toBeGreaterThan(checkpointWrite.settledAt!);
      }
      const callsAfterClose = adapter.calls.length;
      run.recordActivity();
      await env.clock.advance(1000);
      expect(adapter.calls.length).toBe(callsAfterClose);
    },
  );

  suite.test(
    'C2',
    'the shutdown helper closes the store (drain, flush) on a signal',
    async (env) => {
      const { store } = await env.openStore();
      const [session] = await createSessions(env, store, 1);
      session!.title = 'unsaved when the signal came';
      const closed = deferred<{ report: CloseReport | null; error: unknown }>();
      const remove = installShutdownHooks(store, {
        signals: ['SIGUSR2'],
        exit: false,
        onClosed: (report, error) => closed.resolve({ report, error }),
      });
      try {
        process.emit('SIGUSR2', 'SIGUSR2');
        const { report, error } = await closed.promise;
        expect(error).toBeNull();
        expect(report?.flush.failed).toEqual([]);
        expect(store.closed).toBe(true);
      } finally {
        remove();
      }
      const reopened = await env.openStore();
      expect((await reopened.store.load(session!.id)).title).toBe('unsaved when the signal came');
    },
  );

  suite.test('C2', 'every call after close() is refused with StoreClosedError', async (env) => {
    const opened = await env.openStore();
    const { store } = opened;
    const [session] = await createSessions(env, store, 1);
    await env.closeStore(opened);
    const agent = new GatedAgent();
    const calls: Array<[string, () => unknown]> = [
      ['create', () => store.create({ id: env.id() })],
      ['load', () => store.load(session!.id)],
      ['exists', () => store.exists(session!.id)],
      ['save', () => store.save(session!)],
      ['delete', () => store.delete(session!.id)],
      ['list', () => store.list()],
      ['rename', () => store.rename(session!.id, env.id())],
      ['withLock', () => store.withLock(session!.id, async () => undefined)],
      ['retainedRevisions', () => store.retainedRevisions(session!.id)],
      ['beginRun', () => store.beginRun(session!.id, { userMessage: userInput('x') })],
      ['cancelRun', () => store.cancelRun(session!.id)],
      ['readJournal', () => store.readJournal(session!.id, 'run-1')],
      ['runSummary', () => store.runSummary(session!.id, 'run-1')],
      ['listRuns', () => store.listRuns(session!.id)],
      ['flushAll', () => store.flushAll()],
      ['quarantined', () => store.quarantined()],
      ['lifecycle.commit', () => store.lifecycle.commit(session!.id, { agent })],
    ];
    const problems: string[] = [];
    for (const [name, call] of calls) {
      const error = await captureError(call);
      if (!StoreClosedError.isInstance(error)) problems.push(`${name}: ${String(error)}`);
    }
    expect(problems).toEqual([]);
  });

  suite.test(
    'C5',
    'once close() begins, new runs and new memory commits are refused',
    async (env) => {
      const { store } = await env.openStore();
      const [busy, other] = await createSessions(env, store, 2);
      const agent = new GatedAgent();
      const release = deferred();
      agent.gate = release.promise;
      store.lifecycle.registerAgent(busy!.id, agent);
      await store.lifecycle.markTurnCompleted(busy!.id);
      const closing = store.close();
      await agent.entered.promise;
      await expectTypedError(
        store.beginRun(other!.id, { userMessage: userInput('too late') }),
        StoreClosedError,
      );
      await expectTypedError(store.lifecycle.commit(other!.id, { agent }), StoreClosedError);
      release.resolve();
      const report = await closing;
      expect(report.lifecycle.committed).toContain(busy!.id);
    },
  );

  suite.test(
    'C5',
    'a hung memory commit is abandoned at the drain deadline, told so, and close() completes',
    async (env) => {
      const { store } = await env.openStore({ lifecycle: { drainDeadlineMs: 50 } });
      const [session] = await createSessions(env, store, 1);
      const signals: AbortSignal[] = [];
      const hung: MemoryAgent = {
        commitMemory: (context) => {
          signals.push(context.signal);
          return new Promise<void>(() => undefined);
        },
      };
      store.lifecycle.registerAgent(session!.id, hung);
      await store.lifecycle.markTurnCompleted(session!.id);
      session!.title = 'flushed despite the hung commit';
      const closing = store.close();
      await drainCallbacks();
      await env.clock.advance(60);
      const report = await closing;
      expect(report.lifecycle.abandoned).toContain(session!.id);
      expect(signals.length).toBeGreaterThan(0);
      expect(signals.every((signal) => signal.aborted)).toBe(true);
      expect(report.flush.failed).toEqual([]);
      const reopened = await env.openStore();
      expect((await reopened.store.load(session!.id)).title).toBe(
        'flushed despite the hung commit',
      );
      expect(await reopened.store.lifecycle.hasUncommittedWork(session!.id)).toBe(true);
    },
  );
}

function defineRestartTests(suite: SpecRegistrar): void {
  suite.test(
    'C3',
    'a new store instance sees exactly what was saved with fsync or flushed',
    async (env) => {
      const opened = await env.openStore();
      const { store } = opened;
      const [synced, flushed] = await createSessions(env, store, 2);
      synced!.messages.push(textMessage(env, 'assistant', 'saved with fsync'));
      await store.save(synced!, { fsync: true });
      flushed!.messages.push(textMessage(env, 'assistant', 'saved, then flushed'));
      await store.save(flushed!);
      await store.flushAll();
      // Changed in memory after the flush, never saved: a crash loses it, nothing else.
      flushed!.title = 'never saved';
      const reopened = await env.restartAfterCrash(opened);
      const loadedSynced = await reopened.store.load(synced!.id);
      const loadedFlushed = await reopened.store.load(flushed!.id);
      expect(contentsOf(loadedSynced)).toEqual(['hello 0', 'saved with fsync']);
      expect(contentsOf(loadedFlushed)).toEqual(['hello 1', 'saved, then flushed']);
      expect(loadedFlushed.title).toBe('s1');
      expect(loadedSynced.revision).toBe(synced!.revision);
    },
  );

  suite.test(
    'C3',
    'writes that were not made durable may vanish in a crash but never corrupt',
    async (env) => {
      const opened = await env.openStore();
      const { store } = opened;
      const base = await store.create(
        { id: env.id(), messages: [textMessage(env, 'user', 'v1')] },
        { fsync: true },
      );
      const states = [contentsOf(base)];
      for (let version = 2; version <= 5; version++) {
        base.messages.push(textMessage(env, 'user', `v${version}`));
        await store.save(base);
        states.push(contentsOf(base));
      }
      const unsynced = await store.create({
        id: env.id(),
        messages: [textMessage(env, 'user', 'maybe')],
      });
      const reopened = await env.restartAfterCrash(opened);
      const loaded = await reopened.store.load(base.id);
      expect(states).toContainEqual(contentsOf(loaded));
      const maybe = await captureError(() => reopened.store.load(unsynced.id));
      expect(maybe === undefined || NotFoundError.isInstance(maybe)).toBe(true);
      expect(CorruptDocumentError.isInstance(maybe)).toBe(false);
      expect(await reopened.store.quarantined()).toEqual([]);
    },
  );
}

function defineCacheTests(suite: SpecRegistrar): void {
  suite.test('C4', 'load returns the single live instance while it is cached', async (env) => {
    const { store } = await env.openStore();
    const created = await store.create({ id: env.id() });
    const [first, second] = await Promise.all([store.load(created.id), store.load(created.id)]);
    expect(first).toBe(created);
    expect(second).toBe(created);
  });

  suite.test('C4', 'the cache is bounded', async (env) => {
    const opened = await env.openStore({ cache: { maxSessions: 2 } });
    const ids = (await createSessions(env, opened.store, 4)).map((session) => session.id);
    expect(opened.store.diagnostics().cachedSessions).toBeLessThanOrEqual(2);
    // Nothing holds the evicted session objects any more: the store lets go of them.
    await collectGarbage();
    opened.adapter.clearCalls();
    await opened.store.load(ids[0]!);
    expect(sessionReads(opened, ids[0]!), 'the oldest session was evicted and is read again').toBe(
      1,
    );
    await opened.store.load(ids[3]!);
    expect(sessionReads(opened, ids[3]!), 'a recent session is still cached').toBe(0);
    for (const id of ids) await opened.store.load(id);
    expect(opened.store.diagnostics().cachedSessions).toBeLessThanOrEqual(2);
  });

  suite.test(
    'C4',
    'an evicted session the application still holds stays the live instance (no edit lost)',
    async (env) => {
      const opened = await env.openStore({ cache: { maxSessions: 1 } });
      const { store } = opened;
      const active = await store.load((await createSessions(env, store, 1))[0]!.id);
      const created = await store.create({ id: env.id() });
      // Churn: each load evicts the one before (maxSessions: 1).
      const others = await createSessions(env, store, 3);
      for (const other of others) await store.load(other.id);
      expect(store.diagnostics().cachedSessions).toBeLessThanOrEqual(1);
      active.messages.push(textMessage(env, 'user', 'edited after eviction'));
      created.title = 'created, then evicted';
      const flush = await store.flushAll();
      expect(flush.failed).toEqual([]);
      expect(await store.load(active.id), 'load returns the object the caller holds').toBe(active);
      expect(await store.load(created.id)).toBe(created);
      const reader = await env.openStore();
      expect(contentsOf(await reader.store.load(active.id))).toContain('edited after eviction');
      expect((await reader.store.load(created.id)).title).toBe('created, then evicted');
      // close() covers an evicted, held, edited session the same way.
      for (const other of others) await store.load(other.id);
      active.messages.push(textMessage(env, 'assistant', 'edited before close'));
      const closed = await store.close();
      expect(closed.flush.failed).toEqual([]);
      const afterClose = await env.openStore();
      expect(contentsOf(await afterClose.store.load(active.id))).toContain('edited before close');
    },
  );

  suite.test(
    'C4',
    'eviction never drops a session with a live run or unsaved changes',
    async (env) => {
      const opened = await env.openStore({ cache: { maxSessions: 1 } });
      const { store } = opened;
      const [running, edited] = await createSessions(env, store, 2);
      const run = await store.beginRun(running!.id, { userMessage: userInput('working') });
      const liveRunning = await store.load(running!.id);
      const liveEdited = await store.load(edited!.id);
      liveEdited.title = 'unsaved edit';
      const others = await createSessions(env, store, 4);
      // Only the two pinned sessions may exceed the bound of one.
      expect(store.diagnostics().cachedSessions).toBeLessThanOrEqual(1 + 2);
      opened.adapter.clearCalls();
      expect(await store.load(running!.id)).toBe(liveRunning);
      expect(await store.load(edited!.id)).toBe(liveEdited);
      expect(liveEdited.title).toBe('unsaved edit');
      expect(sessionReads(opened, running!.id) + sessionReads(opened, edited!.id)).toBe(0);
      await run.complete({ assistantMessages: [{ role: 'assistant', content: 'done' }] });
      await store.flushAll();
      // Nothing is pinned any more: the next load brings the cache back within its bound.
      await store.load(others[0]!.id);
      expect(store.diagnostics().cachedSessions).toBeLessThanOrEqual(1);
      const reader = await env.openStore();
      expect((await reader.store.load(edited!.id)).title).toBe('unsaved edit');
      expect(contentsOf(await reader.store.load(running!.id))).toEqual([
        'hello 0',
        'working',
        'done',
      ]);
    },
  );

  suite.test('C4', 'list() neither fills the cache nor refreshes recency', async (env) => {
    const writer = await env.openStore();
    const sessions = await createSessions(env, writer.store, 3);
    const opened = await env.openStore({ cache: { maxSessions: 2 } });
    const { store } = opened;
    await store.list({ limit: 1000 });
    expect(store.diagnostics().cachedSessions, 'list() cached nothing').toBe(0);
    opened.adapter.clearCalls();
    await store.load(sessions[0]!.id);
    expect(sessionReads(opened, sessions[0]!.id), 'list() did not fill the cache').toBe(1);
    await store.load(sessions[1]!.id);
    await store.list({ limit: 1000 });
    await store.list({ limit: 1000, includeRotated: true });
    expect(store.diagnostics().cachedSessions, 'list() did not grow the cache').toBe(2);
    await store.load(sessions[2]!.id);
    // The test holds none of this store's session objects: an evicted one is let go.
    await collectGarbage();
    opened.adapter.clearCalls();
    await store.load(sessions[1]!.id);
    expect(sessionReads(opened, sessions[1]!.id), 'the most recently loaded stays cached').toBe(0);
    await store.load(sessions[0]!.id);
    expect(sessionReads(opened, sessions[0]!.id), 'list() did not refresh the oldest').toBe(1);
  });
}
