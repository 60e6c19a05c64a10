/**
 * B1–B8: atomic and durable saves, optimistic concurrency across store instances,
 * deliberate shrinks, touchUpdatedAt, list and the index, delete for good.
 *
 * One file per contract area, so docs/contract.md links each clause to its tests; that
 * is why these files are longer than the house's usual ~300 lines.
 */
import {
  AlreadyExistsError,
  BackendError,
  KeepsakeError,
  NotFoundError,
  RevisionConflictError,
  RunNotActiveError,
  type Session,
  type SessionStore,
  ShrinkRefusedError,
  SummaryOnlyError,
  sessionSummarySchema,
} from '@keepsake/core';
import { expect } from 'vitest';
import type { TestEnvironment } from '../harness/environment.js';
import {
  captureError,
  contentsOf,
  expectTypedError,
  textMessage,
  userInput,
} from '../harness/fixtures.js';
import { readPersistedSession } from '../harness/persisted-document.js';
import type { SpecRegistrar } from '../harness/suite.js';
import { defineListingPrefixTests } from './b-listing-prefix.js';
import { defineListingTruthTests } from './b-listing-truth.js';
import { definePageEdgeTests } from './b-page-edges.js';
import { defineRefusedWriteTests } from './b-refused-writes.js';
import { defineRetryableFaultTests } from './b-retryable-faults.js';
import { defineUnicodeTests } from './b-unicode.js';
import { defineUnknownOutcomeTests } from './b-unknown-outcome.js';
import { defineAdapterPrimitiveTests } from './h-adapter-primitives.js';

const SUMMARY_FIELDS = Object.keys(sessionSummarySchema.shape);

/** A session holding `count` messages "m1"…"mN". */
async function sessionWith(
  env: TestEnvironment,
  store: SessionStore,
  count: number,
  id = env.id(),
): Promise<Session> {
  const messages = Array.from({ length: count }, (_, index) =>
    textMessage(env, index % 2 === 0 ? 'user' : 'assistant', `m${index + 1}`),
  );
  return store.create({ id, title: 'saves', messages }, { fsync: true });
}

export function defineSaves(suite: SpecRegistrar): void {
  defineAtomicityTests(suite);
  defineConcurrencyTests(suite);
  defineShrinkTests(suite);
  defineIndexTests(suite);
  defineDeleteTests(suite);
  defineRefusedWriteTests(suite);
  defineListingTruthTests(suite);
  defineListingPrefixTests(suite);
  defineAdapterPrimitiveTests(suite);
  defineUnknownOutcomeTests(suite);
  defineUnicodeTests(suite);
  definePageEdgeTests(suite);
  defineRetryableFaultTests(suite);
}

function defineAtomicityTests(suite: SpecRegistrar): void {
  suite.test(
    'B1',
    'a reader on another store instance sees the old or the new document, never a mix',
    async (env) => {
      const { store } = await env.openStore();
      const session = await store.create({ id: env.id(), title: 'v0' }, { fsync: true });
      const observed: number[] = [];
      for (let version = 1; version <= 8; version++) {
        session.title = `v${version}`;
        session.messages.push(textMessage(env, 'user', `m${version}`));
        if (version % 3 === 0) session.metadata = { version };
        const saving = store.save(session);
        const reading = (async () => {
          const reader = await env.openStore();
          const seen = await reader.store.load(session.id);
          const seenVersion = Number(seen.title.slice(1));
          // Every field must come from the same save.
          expect(contentsOf(seen)).toEqual(
            Array.from({ length: seenVersion }, (_, index) => `m${index + 1}`),
          );
          observed.push(seenVersion);
          // The reader stays open until the test ends: closing it would flush (re-persist)
          // what it read, which is a write of its own (C1).
        })();
        await Promise.all([saving, reading]);
      }
      expect(observed.every((version, index) => version === index || version === index + 1)).toBe(
        true,
      );
    },
  );

  suite.test('B1', 'a write that fails leaves the stored document as it was', async (env) => {
    const opened = await env.openStore();
    const { store, adapter } = opened;
    const session = await sessionWith(env, store, 2);
    session.messages.push(textMessage(env, 'user', 'm3'));
    session.title = 'changed';
    const removeFault = adapter.inject({
      method: 'putDocument',
      match: ([collection, id]) => collection === 'sessions' && id === session.id,
      error: () => new BackendError(adapter.name, 'write a session'),
    });
    await expectTypedError(store.save(session, { fsync: true }), BackendError);
    removeFault();
    const persisted = await readPersistedSession(await env.rawAdapter(), session.id);
    expect(persisted!.session.title).toBe('saves');
    expect(persisted!.session.messages.map((message) => message.content)).toEqual(['m1', 'm2']);
    // The failed save left the change in memory; the next save carries all of it.
    await store.save(session, { fsync: true });
    const reopened = await env.restartAfterCrash(opened);
    const loaded = await reopened.store.load(session.id);
    expect([loaded.title, ...contentsOf(loaded)]).toEqual(['changed', 'm1', 'm2', 'm3']);
  });

  // B2's temp files (unique names, exclusive creation, sweep on open, rename retries) are
  // adapter-physical: adapter packages test them. Through the adapter interface the suite
  // checks what a caller can observe: concurrent saves never fail each other, and a write
  // that did not land is never reported as done.
  suite.test(
    'B2',
    'concurrent saves of one session and of many sessions all settle, none fails another',
    async (env) => {
      const { store } = await env.openStore();
      const sessions = await Promise.all(
        [1, 2, 3].map(() => store.create({ id: env.id() }, { fsync: true })),
      );
      const saves: Array<Promise<Session>> = [];
      for (let round = 1; round <= 5; round++) {
        for (const session of sessions) {
          session.messages.push(textMessage(env, 'user', `r${round}`));
          saves.push(store.save(session, { fsync: round % 2 === 0 }));
          saves.push(store.save(session, { skipIndex: true }));
        }
      }
      const outcomes = await Promise.allSettled(saves);
      expect(outcomes.filter((outcome) => outcome.status === 'rejected')).toEqual([]);
      const reader = await env.openStore();
      for (const session of sessions) {
        expect(contentsOf(await reader.store.load(session.id))).toEqual([
          'r1',
          'r2',
          'r3',
          'r4',
          'r5',
        ]);
      }
    },
  );

  suite.test(
    'B2',
    'a write that did not land is reported as failed, never as done',
    async (env) => {
      const { store, adapter } = await env.openStore();
      const session = await sessionWith(env, store, 1);
      const revisionBefore = session.revision;
      const events: string[] = [];
      store.on((event) => {
        if (event.type === 'save' && event.sessionId === session.id) events.push('save');
      });
      session.messages.push(textMessage(env, 'assistant', 'lost?'));
      const removeFault = adapter.inject({
        method: 'putDocument',
        match: ([collection, id]) => collection === 'sessions' && id === session.id,
        error: () => Object.assign(new Error('EIO: i/o error, rename'), { code: 'EIO' }),
      });
      const error = await captureError(() => store.save(session, { fsync: true }));
      removeFault();
      expect(KeepsakeError.isInstance(error), 'a typed error').toBe(true);
      expect(events).toEqual([]);
      expect(session.revision).toBe(revisionBefore);
      const saved = await store.save(session, { fsync: true });
      expect(saved.revision).toBe(revisionBefore + 1);
      const persisted = await readPersistedSession(await env.rawAdapter(), session.id);
      expect(persisted!.revision).toBe(revisionBefore + 1);
    },
  );

  // B3's fsync calls (file, then directory; none without fsync) are adapter-physical and
  // tested by adapter packages; the suite checks what the store asks of the adapter.
  suite.test(
    'B3',
    'save({ fsync: true }) asks for a durable write and the default does not',
    async (env) => {
      const { store, adapter } = await env.openStore();
      const session = await sessionWith(env, store, 1);
      const durableFlags = async (save: () => Promise<unknown>) => {
        adapter.clearCalls();
        await save();
        return adapter
          .callsTo('putDocument')
          .filter((call) => call.args[0] === 'sessions')
          .map((call) => (call.args[3] as { durable: boolean }).durable);
      };
      session.messages.push(textMessage(env, 'user', 'a'));
      expect(await durableFlags(() => store.save(session))).toEqual([false]);
      session.messages.push(textMessage(env, 'user', 'b'));
      expect(await durableFlags(() => store.save(session, { fsync: false }))).toEqual([false]);
      session.messages.push(textMessage(env, 'user', 'c'));
      expect(await durableFlags(() => store.save(session, { fsync: true }))).toEqual([true]);
    },
  );

  suite.test('B3:restart', 'a document saved with fsync survives a crash', async (env) => {
    const opened = await env.openStore();
    const session = await sessionWith(env, opened.store, 2);
    session.messages.push(textMessage(env, 'user', 'durable'));
    await opened.store.save(session, { fsync: true });
    const reopened = await env.restartAfterCrash(opened);
    expect(contentsOf(await reopened.store.load(session.id))).toEqual(['m1', 'm2', 'durable']);
  });
}

function defineConcurrencyTests(suite: SpecRegistrar): void {
  suite.test(
    'B4',
    'concurrent saves of one session from two store instances: one conflicts with the current revision, nothing is overwritten',
    async (env) => {
      const first = await env.openStore();
      const created = await sessionWith(env, first.store, 1);
      const second = await env.openStore();
      const mine = await first.store.load(created.id);
      const theirs = await second.store.load(created.id);
      mine.messages.push(textMessage(env, 'assistant', 'from first'));
      theirs.messages.push(textMessage(env, 'assistant', 'from second'));
      const outcomes = await Promise.allSettled([
        first.store.save(mine, { fsync: true }),
        second.store.save(theirs, { fsync: true }),
      ]);
      const fulfilled = outcomes.filter((outcome) => outcome.status === 'fulfilled');
      const rejected = outcomes.filter((outcome) => outcome.status === 'rejected');
      expect(fulfilled).toHaveLength(1);
      expect(rejected).toHaveLength(1);
      const error = (rejected[0] as PromiseRejectedResult).reason;
      expect(RevisionConflictError.isInstance(error), 'a RevisionConflictError').toBe(true);
      const winner = (fulfilled[0] as PromiseFulfilledResult<Session>).value;
      expect((error as RevisionConflictError).currentRevision).toBe(winner.revision);
      const reader = await env.openStore();
      const stored = await reader.store.load(created.id);
      expect(stored.revision).toBe(winner.revision);
      expect(contentsOf(stored)).toEqual(contentsOf(winner));
    },
  );

  suite.test(
    'B4',
    'a save based on a stale revision fails with the current revision and writes nothing',
    async (env) => {
      const first = await env.openStore();
      const created = await sessionWith(env, first.store, 1);
      const second = await env.openStore();
      const stale = await second.store.load(created.id);
      created.messages.push(textMessage(env, 'assistant', 'newer'));
      const newer = await first.store.save(created, { fsync: true });
      stale.title = 'stale edit';
      second.adapter.clearCalls();
      const error = await expectTypedError(second.store.save(stale), RevisionConflictError);
      expect(error.currentRevision).toBe(newer.revision);
      expect(error.sessionId).toBe(created.id);
      const persisted = await readPersistedSession(await env.rawAdapter(), created.id);
      expect(persisted!.revision).toBe(newer.revision);
      expect(persisted!.session.title).toBe('saves');
    },
  );

  suite.test(
    'B4',
    "after a conflict, reload + re-apply + save succeeds and loses neither writer's change",
    async (env) => {
      const first = await env.openStore();
      const created = await sessionWith(env, first.store, 1);
      const second = await env.openStore();
      const mine = await second.store.load(created.id);
      created.messages.push(textMessage(env, 'assistant', 'from the first instance'));
      await first.store.save(created, { fsync: true });

      const applyMine = () => {
        mine.messages.push(textMessage(env, 'user', 'from the second instance'));
        mine.metadata = { ...mine.metadata, editedBy: 'second' };
      };
      applyMine();
      const conflict = await expectTypedError(second.store.save(mine), RevisionConflictError);
      expect(conflict.currentRevision).toBe(created.revision);
      const reloaded = await second.store.reload(created.id);
      expect(reloaded, 'reload updates the live instance').toBe(mine);
      expect(await second.store.load(created.id)).toBe(mine);
      expect(mine.revision).toBe(created.revision);
      expect(contentsOf(mine), 'unsaved local edits are discarded').toEqual([
        'm1',
        'from the first instance',
      ]);
      expect(mine.metadata.editedBy).toBeUndefined();
      applyMine();
      const saved = await second.store.save(mine, { fsync: true });
      expect(saved.revision).toBe(created.revision + 1);

      // The first instance is stale now: the same way out works for it.
      created.title = 'retitled by the first';
      await expectTypedError(first.store.save(created), RevisionConflictError);
      await first.store.reload(created.id);
      expect(contentsOf(created)).toEqual([
        'm1',
        'from the first instance',
        'from the second instance',
      ]);
      created.title = 'retitled by the first';
      await first.store.save(created, { fsync: true });

      const reader = await env.openStore();
      const loaded = await reader.store.load(created.id);
      expect(contentsOf(loaded)).toEqual([
        'm1',
        'from the first instance',
        'from the second instance',
      ]);
      expect([loaded.title, loaded.metadata.editedBy]).toEqual(['retitled by the first', 'second']);
      expect(loaded.revision).toBe(saved.revision + 1);
    },
  );

  suite.test(
    'B4',
    'two instances creating one id: one wins, the other gets a typed error, nothing is overwritten',
    async (env) => {
      const first = await env.openStore();
      const second = await env.openStore();
      const id = env.id();
      const outcomes = await Promise.allSettled([
        first.store.create({ id, title: 'first' }, { fsync: true }),
        second.store.create({ id, title: 'second' }, { fsync: true }),
      ]);
      const fulfilled = outcomes.filter((outcome) => outcome.status === 'fulfilled');
      const rejected = outcomes.filter((outcome) => outcome.status === 'rejected');
      expect(fulfilled).toHaveLength(1);
      const reason = (rejected[0] as PromiseRejectedResult).reason;
      expect(
        AlreadyExistsError.isInstance(reason) || RevisionConflictError.isInstance(reason),
      ).toBe(true);
      const winner = (fulfilled[0] as PromiseFulfilledResult<Session>).value;
      const reader = await env.openStore();
      expect((await reader.store.load(id)).title).toBe(winner.title);
    },
  );
}

function defineShrinkTests(suite: SpecRegistrar): void {
  suite.test(
    'B5',
    'a save that would remove stored messages is refused without allowShrink and writes nothing',
    async (env) => {
      const opened = await env.openStore();
      const { store, adapter } = opened;
      const session = await sessionWith(env, store, 3);
      const dropped = session.messages.pop()!;
      adapter.clearCalls();
      const error = await expectTypedError(
        store.save(session, { fsync: true }),
        ShrinkRefusedError,
      );
      expect(error.missingMessageIds).toEqual([dropped.id]);
      // Replacing a message is a removal too.
      session.messages.push(textMessage(env, 'assistant', 'replacement'));
      await expectTypedError(store.save(session), ShrinkRefusedError);
      expect(adapter.callsTo('putDocument')).toEqual([]);
      const reopened = await env.restartAfterCrash(opened);
      expect(contentsOf(await reopened.store.load(session.id))).toEqual(['m1', 'm2', 'm3']);
    },
  );

  suite.test(
    'B5',
    'a deliberate shrink saves; the revision before it is kept, readable only on request',
    async (env) => {
      const { store } = await env.openStore();
      const session = await sessionWith(env, store, 4);
      const before = session.revision;
      session.messages.splice(2, 2);
      await store.save(session, { allowShrink: true, fsync: true });
      expect(contentsOf(await store.load(session.id))).toEqual(['m1', 'm2']);
      expect(await store.retainedRevisions(session.id)).toContain(before);
      const retained = await store.loadRetainedRevision(session.id, before);
      expect(contentsOf(retained)).toEqual(['m1', 'm2', 'm3', 'm4']);
      const summary = (await store.list({ limit: 1000 })).sessions.find(
        (entry) => entry.id === session.id,
      );
      expect(summary?.messageCount).toBe(2);
    },
  );

  suite.test(
    'B5',
    'a session loaded summary-only cannot be saved, not even with allowShrink',
    async (env) => {
      const opened = await env.openStore();
      const session = await sessionWith(env, opened.store, 3);
      const reopened = await env.restartGracefully(opened);
      const summary = await reopened.store.load(session.id, { summaryOnly: true });
      summary.title = 'wiped?';
      await expectTypedError(reopened.store.save(summary), SummaryOnlyError);
      await expectTypedError(reopened.store.save(summary, { allowShrink: true }), SummaryOnlyError);
      const full = await reopened.store.load(session.id);
      expect(contentsOf(full)).toEqual(['m1', 'm2', 'm3']);
      const persisted = await readPersistedSession(await env.rawAdapter(), session.id);
      expect(persisted!.session.messages).toHaveLength(3);
    },
  );

  suite.test(
    'B5:restart',
    'no restart, flush of another instance or recovery rolls a deliberate shrink back',
    async (env) => {
      const opened = await env.openStore();
      const session = await sessionWith(env, opened.store, 4);
      const before = session.revision;
      // Another instance holds the larger revision in memory when the shrink happens.
      const holder = await env.openStore();
      expect(contentsOf(await holder.store.load(session.id))).toHaveLength(4);
      session.messages.splice(1, 3);
      await opened.store.save(session, { allowShrink: true, fsync: true });
      await env.closeStore(holder);
      const afterCrash = await env.restartAfterCrash(opened);
      expect(contentsOf(await afterCrash.store.load(session.id))).toEqual(['m1']);
      expect(await afterCrash.store.retainedRevisions(session.id)).toContain(before);
      const run = await afterCrash.store.beginRun(session.id, { userMessage: userInput('next') });
      await run.complete({ assistantMessages: [{ role: 'assistant', content: 'answer' }] });
      await afterCrash.store.flushAll();
      const afterClose = await env.restartGracefully(afterCrash);
      const loaded = await afterClose.store.load(session.id);
      expect(contentsOf(loaded)).toEqual(['m1', 'next', 'answer']);
      expect(
        (await afterClose.store.list({ limit: 1000 })).sessions.find(
          (entry) => entry.id === session.id,
        )?.messageCount,
      ).toBe(3);
    },
  );

  suite.test(
    'B6',
    'save sets updatedAt to now by default; touchUpdatedAt: false leaves it',
    async (env) => {
      const opened = await env.openStore();
      const { store } = opened;
      const session = await sessionWith(env, store, 1);
      const createdAt = env.clock.now();
      await env.clock.advance(1000);
      session.messages.push(textMessage(env, 'user', 'later'));
      await store.save(session, { fsync: true });
      expect(session.updatedAt).toBe(createdAt + 1000);
      await env.clock.advance(1000);
      session.title = 'repair';
      await store.save(session, { fsync: true, touchUpdatedAt: false });
      expect(session.updatedAt).toBe(createdAt + 1000);
      await env.clock.advance(1000);
      await store.flushAll();
      const reopened = await env.restartAfterCrash(opened);
      const loaded = await reopened.store.load(session.id);
      expect([loaded.title, loaded.updatedAt, loaded.createdAt]).toEqual([
        'repair',
        createdAt + 1000,
        createdAt,
      ]);
      const summary = (await reopened.store.list({ limit: 1000 })).sessions.find(
        (entry) => entry.id === session.id,
      );
      expect(summary?.updatedAt).toBe(createdAt + 1000);
    },
  );
}

function defineIndexTests(suite: SpecRegistrar): void {
  suite.test(
    'B7',
    'list returns summaries newest first with only summary fields, also after a restart',
    async (env) => {
      const opened = await env.openStore();
      const ids: string[] = [];
      for (let index = 0; index < 3; index++) {
        const session = await opened.store.create(
          {
            id: env.id(),
            title: `t${index}`,
            metadata: { secret: 'never listed' },
            providerState: { token: 'never listed' },
            messages: Array.from({ length: index + 1 }, () => textMessage(env, 'user', 'x')),
          },
          { fsync: true },
        );
        ids.push(session.id);
        await env.clock.advance(1000);
      }
      const run = await opened.store.beginRun(ids[0]!, { userMessage: userInput('pending') });
      expect(run.active).toBe(true);
      const check = async (store: SessionStore) => {
        const { sessions } = await store.list({ limit: 1000 });
        const mine = sessions.filter((entry) => ids.includes(entry.id));
        expect(mine.map((entry) => entry.id)).toEqual([ids[0], ids[2], ids[1]]);
        for (const entry of mine) {
          for (const key of Object.keys(entry)) expect(SUMMARY_FIELDS).toContain(key);
        }
        expect(mine.map((entry) => [entry.messageCount, entry.pending])).toEqual([
          [1, true],
          [3, false],
          [2, false],
        ]);
        expect(JSON.stringify(mine)).not.toContain('never listed');
      };
      await check(opened.store);
      await check((await env.restartAfterCrash(opened)).store);
    },
  );

  suite.test('B7', 'pagination by cursor visits every session once, in order', async (env) => {
    const { store } = await env.openStore();
    const created: string[] = [];
    for (let index = 0; index < 7; index++) {
      created.push((await store.create({ id: env.id(), title: `p${index}` })).id);
      await env.clock.advance(10);
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page = await store.list({ cursor, limit: 3 });
      expect(page.sessions.length).toBeLessThanOrEqual(3);
      seen.push(...page.sessions.map((entry) => entry.id));
      cursor = page.nextCursor;
      pages++;
    } while (cursor !== null && pages < 10);
    expect(seen).toEqual([...created].reverse());
  });

  suite.test(
    'B7',
    'skipIndex writes the session but leaves the index untouched until the next full save',
    async (env) => {
      const { store, adapter } = await env.openStore();
      const session = await store.create({ id: env.id(), title: 'before' }, { fsync: true });
      const listedTitle = async () =>
        (await store.list({ limit: 1000 })).sessions.find((entry) => entry.id === session.id)
          ?.title;
      session.title = 'after';
      session.messages.push(textMessage(env, 'user', 'checkpointed'));
      adapter.clearCalls();
      await store.save(session, { skipIndex: true });
      expect(adapter.indexUpdates()).toEqual([]);
      expect(adapter.callsTo('replaceIndex')).toEqual([]);
      expect(await listedTitle()).toBe('before');
      const reader = await env.openStore();
      expect((await reader.store.load(session.id)).title).toBe('after');
      await store.save(session);
      expect(await listedTitle()).toBe('after');
    },
  );

  const brokenIndexes = {
    missing: { status: 'missing' },
    corrupt: { status: 'corrupt', reason: 'bad bytes' },
    'unreadable-entry': { status: 'ok', entries: [{ id: '../x', title: 7 }], nextCursor: null },
  } as const;
  for (const status of Object.keys(brokenIndexes) as Array<keyof typeof brokenIndexes>) {
    suite.test('B7', `a ${status} index is rebuilt from the documents`, async (env) => {
      const { store, adapter } = await env.openStore();
      const kept = await store.create({ id: env.id(), title: 'kept' }, { fsync: true });
      const parent = await store.create({ id: env.id(), title: 'parent' }, { fsync: true });
      const child = await store.rename(parent.id, env.id());
      const deleted = await store.create({ id: env.id(), title: 'deleted' }, { fsync: true });
      await store.delete(deleted.id);
      const unindexed = await store.create(
        { id: env.id(), title: 'skipIndex' },
        { skipIndex: true },
      );
      adapter.inject({
        method: 'listIndex',
        times: 1,
        replace: async () => brokenIndexes[status],
      });
      const listed = (await store.list({ limit: 1000 })).sessions.map((entry) => entry.id);
      expect(adapter.callsTo('replaceIndex').length).toBeGreaterThan(0);
      expect(listed).toEqual(expect.arrayContaining([kept.id, child.id, unindexed.id]));
      expect(listed).not.toContain(deleted.id);
      expect(listed).not.toContain(parent.id);
      const withRotated = (await store.list({ limit: 1000, includeRotated: true })).sessions;
      expect(withRotated.map((entry) => entry.id)).toContain(parent.id);
    });
  }

  suite.test(
    'B7',
    'a deleted session is never listed; a rotated parent is listed only on request and stays loadable',
    async (env) => {
      const { store } = await env.openStore();
      const parent = await store.create({
        id: env.id(),
        messages: [textMessage(env, 'user', 'p')],
      });
      const childId = env.id();
      await store.rename(parent.id, childId);
      const gone = await store.create({ id: env.id() });
      await store.delete(gone.id);
      const ids = (await store.list({ limit: 1000 })).sessions.map((entry) => entry.id);
      expect(ids).toContain(childId);
      expect(ids).not.toContain(parent.id);
      expect(ids).not.toContain(gone.id);
      const all = (await store.list({ limit: 1000, includeRotated: true })).sessions;
      expect(all.find((entry) => entry.id === parent.id)?.rotatedTo).toBe(childId);
      expect(all.map((entry) => entry.id)).not.toContain(gone.id);
      expect((await store.load(parent.id)).rotatedTo).toBe(childId);
    },
  );
}

function defineDeleteTests(suite: SpecRegistrar): void {
  suite.test(
    'B8',
    'delete removes the document, its journals, its lifecycle state and retained revisions',
    async (env) => {
      const { store } = await env.openStore();
      const session = await sessionWith(env, store, 3);
      const run = await store.beginRun(session.id, { userMessage: userInput('q'), runId: 'run-1' });
      await run.append({ type: 'token', data: { text: 'a' } });
      await run.complete();
      const live = await store.load(session.id);
      live.messages.splice(0, 1);
      await store.save(live, { allowShrink: true });
      expect(await store.retainedRevisions(session.id)).not.toEqual([]);
      expect(await store.lifecycle.hasUncommittedWork(session.id)).toBe(true);

      expect(await store.delete(session.id)).toBe(true);
      expect(await store.exists(session.id)).toBe(false);
      await expectTypedError(store.load(session.id), NotFoundError);
      expect(await store.listRuns(session.id)).toEqual([]);
      expect((await store.readJournal(session.id, 'run-1')).exists).toBe(false);
      expect(await store.retainedRevisions(session.id)).toEqual([]);
      expect(await store.lifecycle.hasUncommittedWork(session.id)).toBe(false);
      const raw = await env.rawAdapter();
      expect(await raw.getDocument('sessions', session.id)).toBeNull();
      expect(await raw.getDocument('lifecycle', session.id)).toBeNull();
      expect(
        (
          await raw.listDocuments('revisions', {
            prefix: `${session.id}.`,
            cursor: null,
            limit: 100,
          })
        ).ids,
      ).toEqual([]);
      expect(await raw.listLogs(session.id)).toEqual([]);
      expect(await store.delete(session.id)).toBe(false);
    },
  );

  suite.test(
    'B8',
    'a run of another instance that ends after the delete does not bring the session back',
    async (env) => {
      const worker = await env.openStore({ journal: { durability: 'each' } });
      const session = await sessionWith(env, worker.store, 1);
      const run = await worker.store.beginRun(session.id, { userMessage: userInput('q') });
      await run.append({ type: 'token', data: { text: 'before the delete' } });
      const deleter = await env.openStore();
      expect(await deleter.store.delete(session.id)).toBe(true);
      // The worker does not know yet: whatever it still does must bring nothing back.
      await captureError(() => run.append({ type: 'token', data: { text: 'after the delete' } }));
      // Its stream is no longer any session's active stream (D4): fenced out, not "reload and retry".
      await expectTypedError(run.complete(), RunNotActiveError);
      await captureError(() => worker.store.flushAll());
      const reader = await env.openStore();
      expect(await reader.store.exists(session.id)).toBe(false);
      expect(await reader.store.listRuns(session.id), 'no journal of the deleted session').toEqual(
        [],
      );
      const raw = await env.rawAdapter();
      expect(await raw.getDocument('sessions', session.id)).toBeNull();
      expect(await raw.listLogs(session.id), 'no journal on the backend').toEqual([]);
      await expectTypedError(reader.store.load(session.id), NotFoundError);
      const listed = (await reader.store.list({ limit: 1000, includeRotated: true })).sessions;
      expect(listed.map((entry) => entry.id)).not.toContain(session.id);
      const recreated = await reader.store.create({ id: session.id });
      expect(recreated.messages).toEqual([]);
      expect(await reader.store.listRuns(session.id)).toEqual([]);
      const next = await reader.store.beginRun(session.id, { userMessage: userInput('fresh') });
      expect((await next.append({ type: 'token', data: { text: 'new' } })).sequence).toBe(1);
    },
  );

  suite.test(
    'B8',
    'a run whose first append comes after another instance deleted its session leaves no journal',
    async (env) => {
      for (const durability of ['each', 'group'] as const) {
        const worker = await env.openStore({ journal: { durability } });
        const session = await sessionWith(env, worker.store, 1);
        const run = await worker.store.beginRun(session.id, { userMessage: userInput('q') });
        const deleter = await env.openStore();
        expect(await deleter.store.delete(session.id)).toBe(true);
        // The run's journal does not exist yet: its first append would create one for a
        // session that is gone. It is refused, and what it wrote is removed.
        const first = run.append({ type: 'token', data: { text: 'after the delete' } });
        await expectTypedError(first, RunNotActiveError);
        await expectTypedError(
          run.append({ type: 'token', data: { text: 'again' } }),
          RunNotActiveError,
        );
        await captureError(() => worker.store.flushAll());
        const raw = await env.rawAdapter();
        expect(await raw.listLogs(session.id), `no journal left (${durability})`).toEqual([]);
        expect(await raw.getDocument('sessions', session.id)).toBeNull();
        const reader = await env.openStore();
        await expectTypedError(reader.store.load(session.id), NotFoundError);
        const recreated = await reader.store.create({ id: session.id });
        expect(recreated.messages).toEqual([]);
        expect(await reader.store.listRuns(session.id)).toEqual([]);
      }
    },
  );

  suite.test(
    'B8',
    'a run whose first act after another instance deleted its session is cancel or fail ends cleanly',
    async (env) => {
      for (const end of ['cancel', 'fail'] as const) {
        const worker = await env.openStore();
        const session = await sessionWith(env, worker.store, 1);
        const run = await worker.store.beginRun(session.id, { userMessage: userInput('q') });
        const deleter = await env.openStore();
        expect(await deleter.store.delete(session.id)).toBe(true);
        const outcome =
          end === 'cancel' ? await run.cancel() : await run.fail({ message: 'agent failed' });
        expect(outcome, end).toMatchObject({ cancelled: false, reason: 'not-active' });
        const raw = await env.rawAdapter();
        expect(await raw.listLogs(session.id), `no journal left (${end})`).toEqual([]);
        // The worker let go of the run and of its stale copy: the id is free there again.
        const recreated = await worker.store.create({ id: session.id });
        expect(recreated.messages).toEqual([]);
        const next = await worker.store.beginRun(session.id, { userMessage: userInput('new') });
        expect((await next.append({ type: 'token', data: { text: 'new' } })).sequence).toBe(1);
        await next.complete();
      }
    },
  );

  suite.test(
    'B8',
    'cancelRun from a third instance after the delete reports no pending turn and writes nothing',
    async (env) => {
      const worker = await env.openStore();
      const session = await sessionWith(env, worker.store, 1);
      await worker.store.beginRun(session.id, { userMessage: userInput('q') });
      const third = await env.openStore();
      expect((await third.store.load(session.id)).pending).not.toBeNull();
      const deleter = await env.openStore();
      expect(await deleter.store.delete(session.id)).toBe(true);
      expect(await third.store.cancelRun(session.id)).toMatchObject({
        cancelled: false,
        reason: 'no-pending-turn',
      });
      const raw = await env.rawAdapter();
      expect(await raw.listLogs(session.id)).toEqual([]);
      expect(await raw.getDocument('sessions', session.id)).toBeNull();
      await expectTypedError(third.store.load(session.id), NotFoundError);
    },
  );

  suite.test(
    'B8',
    'adapter primitives: hasDocument answers without reading; deleteLog removes one run only',
    async (env) => {
      const raw = await env.rawAdapter();
      const id = env.id();
      expect(await raw.hasDocument('sessions', id)).toBe(false);
      const written = await raw.putDocument(
        'sessions',
        id,
        { kind: 'full', revision: 1, text: '{}' },
        { expectedRevision: null, durable: false },
      );
      expect(written.ok).toBe(true);
      expect(await raw.hasDocument('sessions', id)).toBe(true);
      expect(await raw.hasDocument('lifecycle', id)).toBe(false);
      for (const runId of ['run-a', 'run-b']) {
        const appended = await raw.appendLog(id, runId, [{ sequence: 1, text: '{}' }], {
          durability: 'none',
        });
        expect(appended.ok).toBe(true);
      }
      await raw.deleteLog(id, 'run-a', { durable: true });
      await raw.deleteLog(id, 'never-written', { durable: true });
      expect(await raw.listLogs(id)).toEqual(['run-b']);
      expect((await raw.readLog(id, 'run-a', { afterSequence: 0, limit: 10 })).exists).toBe(false);
      expect((await raw.readLog(id, 'run-b', { afterSequence: 0, limit: 10 })).records).toEqual([
        { sequence: 1, text: '{}' },
      ]);
      await raw.deleteDocument('sessions', id, { durable: false });
      expect(await raw.hasDocument('sessions', id)).toBe(false);
    },
  );

  suite.test(
    'B8:restart',
    'nothing brings a deleted session back; re-creating it starts empty, its first journal at sequence 1',
    async (env) => {
      const holder = await env.openStore();
      const deleter = await env.openStore();
      const session = await sessionWith(env, deleter.store, 2);
      const run = await deleter.store.beginRun(session.id, {
        userMessage: userInput('q'),
        runId: 'run-1',
      });
      await run.append({ type: 'token', data: { text: 'a' } });
      await run.complete();
      // Another instance holds the session in its cache when it is deleted.
      const cached = await holder.store.load(session.id);
      expect(cached.messages.length).toBeGreaterThan(0);
      expect(await deleter.store.delete(session.id)).toBe(true);
      await env.closeStore(holder);
      const afterCrash = await env.restartAfterCrash(deleter);
      expect(await afterCrash.store.exists(session.id)).toBe(false);
      expect(
        (await afterCrash.store.list({ limit: 1000 })).sessions.map((entry) => entry.id),
      ).not.toContain(session.id);
      const recreated = await afterCrash.store.create({ id: session.id });
      expect(recreated.messages).toEqual([]);
      expect(await afterCrash.store.retainedRevisions(session.id)).toEqual([]);
      expect(await afterCrash.store.lifecycle.hasUncommittedWork(session.id)).toBe(false);
      const again = await afterCrash.store.beginRun(session.id, {
        userMessage: userInput('new'),
        runId: 'run-1',
      });
      const first = await again.append({ type: 'token', data: { text: 'fresh' } });
      expect(first.sequence).toBe(1);
      const journal = await afterCrash.store.readJournal(session.id, 'run-1');
      expect(journal.records.map((record) => record.data.text)).toEqual(['fresh']);
    },
  );
}
