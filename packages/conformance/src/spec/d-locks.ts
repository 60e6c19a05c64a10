/**
 * D1–D4: one mutex per session, lock identity across renames, no lock held across a
 * memory commit, runs fenced by their stream id.
 *
 * One file per contract area, so docs/contract.md links each clause to its tests; that
 * is why these files are longer than the house's usual ~300 lines.
 */
import {
  AlreadyExistsError,
  BackendError,
  JournalSealedError,
  LockReentryError,
  type MemoryAgent,
  RunNotActiveError,
  RunTakenOverError,
  SessionBusyError,
  type SessionStore,
  type StoreEvent,
} from '@keepsake/core';
import { expect } from 'vitest';
import type { TestEnvironment } from '../harness/environment.js';
import {
  captureError,
  contentsOf,
  deferred,
  drainCallbacks,
  expectTypedError,
  nextEvent,
  textMessage,
  userInput,
} from '../harness/fixtures.js';
import { holdNextSessionWrite } from '../harness/held-adapter-call.js';
import type { SpecRegistrar } from '../harness/suite.js';
import { defineRenameLockMergeTests } from './d-rename-lock-merge.js';

/** Two fresh ids and a session under the first, with one message, ready to be renamed. */
async function sessionToRename(
  env: TestEnvironment,
  store: SessionStore,
): Promise<{ oldId: string; newId: string }> {
  const oldId = env.id();
  const newId = env.id();
  await store.create({ id: oldId, messages: [textMessage(env, 'user', 'history')] });
  return { oldId, newId };
}

/**
 * Takes the lock of `oldId`, renames the session to `newId` inside it and keeps holding the
 * lock until `release()`; records 'holder done' in `order` as it lets go.
 */
function renameInsideHeldLock(
  store: SessionStore,
  oldId: string,
  newId: string,
  order: string[],
): { renamed: Promise<void>; done: Promise<void>; release(): void } {
  const renamed = deferred();
  const release = deferred();
  const done = store.withLock(oldId, async () => {
    await store.rename(oldId, newId);
    renamed.resolve();
    await release.promise;
    order.push('holder done');
  });
  return { renamed: renamed.promise, done, release: () => release.resolve() };
}

export function defineLocks(suite: SpecRegistrar): void {
  defineRenameLockMergeTests(suite);
  suite.test('D1', 'withLock serializes work on one session, not across sessions', async (env) => {
    const { store } = await env.openStore();
    const order: string[] = [];
    const releaseFirst = deferred();
    const first = store.withLock('lock-a', async () => {
      order.push('a1 start');
      await releaseFirst.promise;
      order.push('a1 end');
    });
    const second = store.withLock('lock-a', async () => {
      order.push('a2');
    });
    const other = store.withLock('lock-b', async () => {
      order.push('b');
    });
    await other;
    await drainCallbacks();
    expect(order).toEqual(['a1 start', 'b']);
    releaseFirst.resolve();
    await Promise.all([first, second]);
    expect(order).toEqual(['a1 start', 'b', 'a1 end', 'a2']);
  });

  suite.test(
    'D1',
    're-entering a held lock from the same async context is a LockReentryError, not a deadlock',
    async (env) => {
      const { store } = await env.openStore();
      const id = env.id();
      const error = await captureError(() =>
        store.withLock(id, () => store.withLock(id, async () => 'never')),
      );
      expect(LockReentryError.isInstance(error), String(error)).toBe(true);
      expect((error as LockReentryError).sessionId).toBe(id);
      // The lock is usable afterwards.
      expect(await store.withLock(id, async () => 'free')).toBe('free');
      // Store operations of the same session inside the caller's lock do not deadlock.
      const session = await store.create({ id });
      await store.withLock(id, async () => {
        session.messages.push(textMessage(env, 'user', 'inside the lock'));
        await store.save(session);
      });
      expect(contentsOf(await store.load(id))).toEqual(['inside the lock']);
    },
  );

  suite.test(
    'D1',
    'pruning idle lock entries never breaks a lock that is held or awaited',
    async (env) => {
      const { store } = await env.openStore();
      const held = env.id();
      const order: string[] = [];
      const release = deferred();
      const holder = store.withLock(held, async () => {
        order.push('holder');
        await release.promise;
        order.push('holder done');
      });
      const waiter = store.withLock(held, async () => {
        order.push('waiter');
      });
      // Many other sessions come and go; their entries go idle and are pruned.
      for (let index = 0; index < 300; index++) {
        await store.withLock(`idle-${index}`, async () => undefined);
      }
      // The held entry is still there; the 300 idle ones did not pile up.
      const whileHeld = store.diagnostics().lockEntries;
      expect(whileHeld, 'the held and awaited lock keeps its entry').toBeGreaterThanOrEqual(1);
      expect(whileHeld, 'idle entries were released').toBeLessThan(300);
      const late = store.withLock(held, async () => {
        order.push('late');
      });
      await drainCallbacks();
      expect(order).toEqual(['holder']);
      release.resolve();
      await Promise.all([holder, waiter, late]);
      expect(order).toEqual(['holder', 'holder done', 'waiter', 'late']);
      expect(store.diagnostics().lockEntries, 'every lock released').toBe(0);
      // An entry that went idle and was pruned is created again and works.
      expect(await store.withLock('idle-0', async () => 'again')).toBe('again');
    },
  );

  suite.test(
    'D1',
    'after many sessions were locked and released by store operations, the lock registry is empty',
    async (env) => {
      const { store } = await env.openStore();
      const ids: string[] = [];
      for (let index = 0; index < 40; index++) {
        const session = await store.create({ id: env.id() });
        session.messages.push(textMessage(env, 'user', `message ${index}`));
        await store.withLock(session.id, () => store.save(session));
        ids.push(session.id);
      }
      const run = await store.beginRun(ids[0]!, { userMessage: userInput('question') });
      await run.append({ type: 'token', data: { text: 'answer' } });
      await run.complete();
      await store.cancelRun(ids[1]!);
      await store.rename(ids[2]!, env.id());
      await store.delete(ids[3]!);
      await Promise.all(ids.slice(4).map((id) => store.load(id)));
      await store.flushAll();
      expect(store.diagnostics().lockEntries, 'no entry outlives its last holder').toBe(0);
    },
  );

  suite.test(
    'D2',
    'a rename inside the held lock of the old id: the new id waits on that same lock',
    async (env) => {
      const { store } = await env.openStore();
      const { oldId, newId } = await sessionToRename(env, store);
      const order: string[] = [];
      const holder = renameInsideHeldLock(store, oldId, newId, order);
      await holder.renamed;
      const viaNew = store.withLock(newId, async () => {
        order.push('new id');
      });
      const viaOld = store.withLock(oldId, async () => {
        order.push('old id');
      });
      await drainCallbacks();
      expect(order).toEqual([]);
      holder.release();
      await Promise.all([holder.done, viaNew, viaOld]);
      expect(order[0]).toBe('holder done');
      expect(order).toHaveLength(3);
    },
  );

  suite.test(
    'D2',
    'while a rename runs, the new id already maps to the lock it holds, also when the old id had no entry',
    async (env) => {
      const { store, adapter } = await env.openStore();
      const { oldId, newId } = await sessionToRename(env, store);
      const write = holdNextSessionWrite(adapter, newId);
      const renaming = store.rename(oldId, newId);
      await write.entered;
      let sawChild: boolean | null = null;
      const viaNew = store.withLock(newId, async () => {
        sawChild = await store.exists(newId);
      });
      await drainCallbacks();
      expect(sawChild, 'the new id waited for the rename').toBeNull();
      write.release();
      await Promise.all([renaming, viaNew]);
      expect(sawChild).toBe(true);
    },
  );

  suite.test(
    'D2',
    'a renamed session keeps its old document as parent, never destroyed, across a restart',
    async (env) => {
      const opened = await env.openStore();
      const oldId = env.id();
      const newId = env.id();
      await opened.store.create({
        id: oldId,
        title: 'rotating',
        messages: [textMessage(env, 'user', 'before')],
      });
      const child = await opened.store.rename(oldId, newId);
      expect(child.id).toBe(newId);
      expect(child.parentId).toBe(oldId);
      expect(contentsOf(child)).toEqual(['before']);
      child.messages.push(textMessage(env, 'assistant', 'after'));
      await opened.store.save(child, { fsync: true });
      const reopened = await env.restartAfterCrash(opened);
      const parent = await reopened.store.load(oldId);
      expect(parent.rotatedTo).toBe(newId);
      expect(contentsOf(parent)).toEqual(['before']);
      const loadedChild = await reopened.store.load(newId);
      expect(loadedChild.parentId).toBe(oldId);
      expect(contentsOf(loadedChild)).toEqual(['before', 'after']);
    },
  );

  suite.test(
    'D2',
    'a rename cut short after the child was written completes when retried; an unrelated session under the new id is refused',
    async (env) => {
      const { store, adapter } = await env.openStore();
      const oldId = env.id();
      const newId = env.id();
      await store.create({ id: oldId, messages: [textMessage(env, 'user', 'before')] });
      const removeFault = adapter.inject({
        method: 'putDocument',
        match: (args) => args[0] === 'sessions' && args[1] === oldId,
        error: () => new Error('injected: the parent write fails'),
        times: 1,
      });
      await expect(store.rename(oldId, newId)).rejects.toThrow();
      removeFault();
      const child = await store.rename(oldId, newId);
      expect(child.id).toBe(newId);
      expect(child.parentId).toBe(oldId);
      expect(contentsOf(child)).toEqual(['before']);
      const reader = await env.openStore();
      expect((await reader.store.load(oldId)).rotatedTo).toBe(newId);
      expect(contentsOf(await reader.store.load(newId))).toEqual(['before']);
      // The new id held by a session that is not this parent's child: never adopted.
      const otherId = env.id();
      const takenId = env.id();
      await store.create({ id: otherId, messages: [textMessage(env, 'user', 'other')] });
      await store.create({ id: takenId, messages: [textMessage(env, 'user', 'taken')] });
      await expectTypedError(store.rename(otherId, takenId), AlreadyExistsError);
      expect((await reader.store.load(otherId)).rotatedTo).toBeNull();
      // A failure reading what holds the new id is reported as itself, not as a taken id.
      const fresh = await env.openStore();
      fresh.adapter.inject({
        method: 'getDocument',
        match: (args) => args[0] === 'sessions' && args[1] === takenId,
        error: () => new Error('injected: the backend fails reading the new id'),
      });
      await expectTypedError(fresh.store.rename(otherId, takenId), BackendError);
    },
  );

  suite.test(
    'D2',
    'a rename inside withLock(oldId) while a run is live does not deadlock; withLock(newId) waits for the holder',
    async (env) => {
      const { store } = await env.openStore();
      const { oldId, newId } = await sessionToRename(env, store);
      const run = await store.beginRun(oldId, { userMessage: userInput('question') });
      const order: string[] = [];
      const holder = renameInsideHeldLock(store, oldId, newId, order);
      // A deadlock would leave this unresolved (and the test timing out); an error rejects it.
      await Promise.race([holder.renamed, holder.done]);
      expect(run.sessionId, 'the run follows the rotation').toBe(newId);
      const viaNew = store.withLock(newId, async () => {
        order.push('new id');
      });
      await drainCallbacks();
      expect(order, 'withLock(newId) waits for the holder of oldId').toEqual([]);
      holder.release();
      await Promise.all([holder.done, viaNew]);
      expect(order).toEqual(['holder done', 'new id']);
      await run.complete({ assistantMessages: [{ role: 'assistant', content: 'answer' }] });
      expect(contentsOf(await store.load(newId))).toEqual(['history', 'question', 'answer']);
      expect(store.diagnostics().liveRuns).toBe(0);
    },
  );

  suite.test(
    'D2',
    'a run that started before a rename appends and completes after it: the child has the turn and the answer, its journal every record 1..n',
    async (env) => {
      const opened = await env.openStore({
        journal: { durability: 'each' },
        checkpoint: { intervalMs: 100, idleRefreshMs: 3_600_000 },
      });
      const { store } = opened;
      const oldId = env.id();
      const newId = env.id();
      await store.create(
        { id: oldId, messages: [textMessage(env, 'user', 'history')] },
        { fsync: true },
      );
      const run = await store.beginRun(oldId, { userMessage: userInput('question') });
      await run.append({ type: 'token', data: { text: 'before ' } });
      await run.append({ type: 'token', data: { text: 'the rename, ' } });
      const child = await store.rename(oldId, newId);
      expect(run.sessionId).toBe(newId);
      expect(child.pending?.streamId, 'the pending turn moved to the child').toBe(run.streamId);
      const parent = await store.load(oldId);
      expect([parent.rotatedTo, parent.pending, contentsOf(parent)]).toEqual([
        newId,
        null,
        ['history'],
      ]);
      // One active run per session: the run now owns the child.
      await expectTypedError(
        store.beginRun(newId, { userMessage: userInput('second run') }),
        SessionBusyError,
      );
      await run.append({ type: 'token', data: { text: 'after it' } });
      // A checkpoint after the rename writes the child, never the parent.
      const checkpointed = nextEvent<StoreEvent>(
        (listener) => store.on(listener),
        (event) => event.type === 'checkpoint',
      );
      run.recordActivity();
      await env.clock.advance(100);
      expect(await checkpointed).toMatchObject({ sessionId: newId, runId: run.runId });
      await run.complete();

      const journal = await store.readJournal(newId, run.runId);
      const sequences = journal.records.map((record) => record.sequence);
      expect(sequences).toEqual(Array.from({ length: sequences.length }, (_, index) => index + 1));
      expect(journal.gap).toBeNull();
      expect(journal.records.map((record) => record.type)).toEqual([
        'token',
        'token',
        'token',
        'done',
      ]);
      expect(journal.records.every((record) => record.sessionId === newId)).toBe(true);
      const summary = await store.runSummary(newId, run.runId);
      expect([summary.lastSequence, summary.terminalState]).toEqual([4, 'completed']);

      // Another instance, past the recovery grace period, sees the same and repairs nothing.
      await env.clock.advance(60_000);
      const reader = await env.openStore();
      const loadedChild = await reader.store.load(newId);
      expect(contentsOf(loadedChild)).toEqual([
        'history',
        'question',
        'before the rename, after it',
      ]);
      expect(loadedChild.pending).toBeNull();
      const loadedParent = await reader.store.load(oldId);
      expect([loadedParent.rotatedTo, loadedParent.pending, contentsOf(loadedParent)]).toEqual([
        newId,
        null,
        ['history'],
      ]);
    },
  );

  suite.test(
    'D3',
    'a memory commit runs outside every session lock: the session can be locked and saved meanwhile',
    async (env) => {
      const { store } = await env.openStore();
      const session = await store.create({ id: env.id() });
      const entered = deferred();
      const release = deferred();
      let lockedInside: unknown = null;
      const agent: MemoryAgent = {
        commitMemory: async () => {
          // A provider that itself touches the session must not deadlock or re-enter.
          lockedInside = await store
            .withLock(session.id, async () => 'locked inside')
            .catch((error: unknown) => error);
          entered.resolve();
          await release.promise;
        },
      };
      store.lifecycle.registerAgent(session.id, agent);
      await store.lifecycle.markTurnCompleted(session.id);
      const committing = store.lifecycle.commit(session.id);
      await entered.promise;
      expect(lockedInside).toBe('locked inside');
      // While the (slow) provider call is in flight, the session's lock is free.
      session.messages.push(textMessage(env, 'user', 'saved during the commit'));
      await store.withLock(session.id, () => store.save(session));
      const run = await store.beginRun(session.id, { userMessage: userInput('and a run') });
      await run.complete({ assistantMessages: [{ role: 'assistant', content: 'done' }] });
      release.resolve();
      expect(await committing).toBe(true);
    },
  );

  suite.test(
    'D4',
    'after a cancel from another store instance, the stale run writes nothing to the session',
    async (env) => {
      const worker = await env.openStore({ journal: { durability: 'each' } });
      const session = await worker.store.create({ id: env.id() }, { fsync: true });
      const run = await worker.store.beginRun(session.id, { userMessage: userInput('question') });
      await run.append({ type: 'token', data: { text: 'partial ' } });
      const canceller = await env.openStore();
      const outcome = await canceller.store.cancelRun(session.id);
      expect(outcome).toEqual({ cancelled: true, sessionId: session.id, runId: run.runId });
      const appendError = await captureError(() =>
        run.append({ type: 'token', data: { text: 'late' } }),
      );
      expect(appendError === undefined || JournalSealedError.isInstance(appendError)).toBe(true);
      await expectTypedError(
        run.complete({ assistantMessages: [{ role: 'assistant', content: 'stale answer' }] }),
        RunNotActiveError,
      );
      const reader = await env.openStore();
      const stored = await reader.store.load(session.id);
      expect(stored.pending).toBeNull();
      const contents = contentsOf(stored);
      expect(contents).not.toContain('stale answer');
      expect(contents.filter((content) => content === 'question')).toHaveLength(1);
      expect(contents.filter((content) => content.includes('partial'))).toHaveLength(1);
      expect(
        stored.messages.filter((message) => message.marker?.type === 'cancelled'),
      ).toHaveLength(1);
    },
  );

  suite.test(
    'D4',
    "a cancelled run's checkpoint never writes its pending turn back",
    async (env) => {
      const worker = await env.openStore({ checkpoint: { intervalMs: 100, idleRefreshMs: 200 } });
      const session = await worker.store.create({ id: env.id() }, { fsync: true });
      const run = await worker.store.beginRun(session.id, { userMessage: userInput('question') });
      const canceller = await env.openStore();
      expect(await canceller.store.cancelRun(session.id)).toMatchObject({ cancelled: true });
      for (let tick = 0; tick < 5; tick++) {
        run.recordActivity();
        await env.clock.advance(100);
      }
      await drainCallbacks();
      const reader = await env.openStore();
      const stored = await reader.store.load(session.id);
      expect(stored.pending).toBeNull();
      expect(
        stored.messages.filter((message) => message.marker?.type === 'cancelled'),
      ).toHaveLength(1);
    },
  );

  suite.test(
    'D4',
    'a run fenced out by recovery on another instance is refused from then on: its next append throws RunTakenOverError, complete() writes nothing, and the answer holds exactly what it appended before the crash record',
    async (env) => {
      const worker = await env.openStore({
        journal: { durability: 'each' },
        checkpoint: { intervalMs: 3_600_000, idleRefreshMs: 3_600_000 },
      });
      const session = await worker.store.create({ id: env.id() }, { fsync: true });
      const run = await worker.store.beginRun(session.id, { userMessage: userInput('question') });
      await run.append({ type: 'token', data: { text: 'first-part ' } });
      await env.clock.advance(60_000);
      const recoverer = await env.openStore();
      const repaired = await recoverer.store.load(session.id);
      expect(repaired.pending).toBeNull();
      // The worker was only slow: its next append finds the crash record and is refused,
      // never acknowledged into a journal nobody folds (D4).
      const lateAppend = await captureError(() =>
        run.append({ type: 'token', data: { text: 'second-part' } }),
      );
      expect(RunTakenOverError.isInstance(lateAppend), String(lateAppend)).toBe(true);
      expect(JournalSealedError.isInstance(lateAppend), 'of the JournalSealedError family').toBe(
        true,
      );
      expect(run.active).toBe(false);
      const after = await env.openStore();
      const journalBefore = await after.store.readJournal(session.id, run.runId);
      await expectTypedError(run.complete(), RunNotActiveError);
      await expectTypedError(
        run.append({ type: 'token', data: { text: 'third-part' } }),
        RunTakenOverError,
      );
      const journalAfter = await after.store.readJournal(session.id, run.runId);
      expect(journalAfter.lastSequence, 'complete() wrote nothing to the journal').toBe(
        journalBefore.lastSequence,
      );
      expect(journalAfter.records.at(-1)?.type).toBe('interrupted');
      const reader = await env.openStore();
      for (let attempt = 0; attempt < 2; attempt++) {
        const stored = await reader.store.load(session.id);
        const text = contentsOf(stored).join('|');
        expect(text.split('first-part').length - 1, text).toBe(1);
        expect(text, 'a refused append is nowhere').not.toContain('second-part');
        expect(contentsOf(stored).filter((content) => content === 'question')).toHaveLength(1);
        expect(stored.pending).toBeNull();
      }
    },
  );
}
