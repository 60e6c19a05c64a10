/**
 * B7 (with A2): a listing shows what is stored, and only that. What a load quarantines leaves
 * the listing with the move; an entry whose document is gone is neither listed nor kept; an
 * index removed out of band is rebuilt from the documents rather than restarted by the next
 * save.
 */
import {
  CorruptDocumentError,
  NotFoundError,
  type SessionStore,
  type SessionSummary,
  type StorageAdapter,
} from '@keepsake/core';
import { expect } from 'vitest';
import { DECLARED_GAP_MARKER } from '../clauses.js';
import { plantDocument } from '../harness/corrupt-documents.js';
import type { TestEnvironment } from '../harness/environment.js';
import { expectTypedError, textMessage } from '../harness/fixtures.js';
import type { SpecRegistrar } from '../harness/suite.js';

export function defineListingTruthTests(suite: SpecRegistrar): void {
  suite.test(
    'B7',
    'a session a load quarantines (A2) leaves the listing with the move, for this store and a new one',
    async (env) => {
      const writer = await env.openStore();
      const kept = await sessionWith(env, writer.store, 'kept', 2);
      const broken = await sessionWith(env, writer.store, 'about to break', 3);
      await env.closeStore(writer);
      // Its stored document stops parsing (a later revision written out of band), while its
      // index entry still says three messages.
      await plantDocument(env, broken.id, 'this is not json {', broken.revision);
      const { store } = await env.openStore();
      expect(await listedSummary(store, broken.id), 'listed before the load').toMatchObject({
        messageCount: 3,
      });

      await expectTypedError(store.load(broken.id), CorruptDocumentError);
      expect(await listedSummary(store, broken.id), 'listed after the quarantine').toBeUndefined();
      const quarantined = await store.quarantined();
      expect(quarantined.map((entry) => entry.id)).toContain(broken.id);
      const reader = await env.openStore();
      expect(await listedSummary(reader.store, broken.id), 'listed by a new store').toBeUndefined();
      expect(await listedSummary(reader.store, kept.id)).toMatchObject({ messageCount: 2 });
      await expectTypedError(reader.store.load(broken.id), NotFoundError);
    },
  );

  suite.test(
    'B7',
    'an index entry whose document is gone is never listed, and the listing removes it',
    async (env) => {
      const { store } = await env.openStore();
      const stored = await sessionWith(env, store, 'stored', 1);
      const ghost = env.id('ghost');
      const raw = await env.rawAdapter();
      // Newest of all, so it would head the first page.
      await raw.putIndexEntry(ghostSummary(ghost, env.clock.now() + 60_000), { durable: true });
      expect(await rawIndexIds(raw), 'the planted entry is in the index').toContain(ghost);

      const listed = (await store.list({ limit: 1000 })).sessions.map((entry) => entry.id);
      expect(listed).toContain(stored.id);
      expect(listed, 'a ghost is not listed').not.toContain(ghost);
      expect(await rawIndexIds(raw), 'a ghost is not kept').not.toContain(ghost);
      const reader = await env.openStore();
      const relisted = (await reader.store.list({ limit: 1000 })).sessions.map((entry) => entry.id);
      expect(relisted).toEqual(expect.arrayContaining([stored.id]));
      expect(relisted).not.toContain(ghost);
    },
  );

  suite.test(
    'B7',
    'a load that finds no document removes the index entry of that session',
    async (env) => {
      const { store } = await env.openStore();
      const ghost = env.id('ghost');
      const raw = await env.rawAdapter();
      await raw.putIndexEntry(ghostSummary(ghost, env.clock.now()), { durable: true });
      await expectTypedError(store.load(ghost), NotFoundError);
      expect(await rawIndexIds(raw), 'the load healed the index').not.toContain(ghost);
    },
  );

  const removeIndex = suite.context.initializer.removeIndex;
  if (removeIndex === undefined) {
    suite.test(
      'B7',
      `${DECLARED_GAP_MARKER} the initializer has no removeIndex hook, so the rebuild of an index removed out of band is not checked on this adapter`,
      async () => {
        // H1: stated, never a silent pass: the hook is really absent.
        expect(suite.context.initializer.removeIndex).toBeUndefined();
      },
    );
  } else {
    suite.test(
      'B7',
      'an index removed out of band is rebuilt from the documents, not restarted by the next save',
      async (env) => {
        const first = await env.openStore();
        const older = [
          await sessionWith(env, first.store, 'before the loss', 1),
          await sessionWith(env, first.store, 'before the loss', 2),
        ];
        await env.closeStore(first);
        await removeIndex.call(suite.context.initializer, env.namespace);

        const { store } = await env.openStore();
        const newer = await sessionWith(env, store, 'after the loss', 1);
        const listed = (await store.list({ limit: 1000 })).sessions.map((entry) => entry.id);
        expect(listed, 'every stored session, not only the one saved since').toEqual(
          expect.arrayContaining([...older.map((session) => session.id), newer.id]),
        );
        const reader = await env.openStore();
        const relisted = (await reader.store.list({ limit: 1000 })).sessions.map(
          (entry) => entry.id,
        );
        expect(relisted).toEqual(
          expect.arrayContaining([...older.map((session) => session.id), newer.id]),
        );
      },
    );
  }
}

async function sessionWith(
  env: TestEnvironment,
  store: SessionStore,
  title: string,
  count: number,
) {
  const messages = Array.from({ length: count }, (_, index) =>
    textMessage(env, 'user', `${title} ${index + 1}`),
  );
  return store.create({ id: env.id(), title, messages }, { fsync: true });
}

async function listedSummary(store: SessionStore, id: string): Promise<SessionSummary | undefined> {
  const { sessions } = await store.list({ limit: 1000, includeRotated: true });
  return sessions.find((entry) => entry.id === id);
}

function ghostSummary(id: string, updatedAt: number): SessionSummary {
  return {
    id,
    title: 'a ghost',
    createdAt: 1,
    updatedAt,
    messageCount: 2,
    pending: false,
    parentId: null,
    rotatedTo: null,
  };
}

/** Every id the adapter's index holds, read through the primitive (no store in between). */
async function rawIndexIds(raw: StorageAdapter): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | null = null;
  for (let pages = 0; pages < 100; pages++) {
    const page = await raw.listIndex({ cursor, limit: 500 });
    if (page.status !== 'ok') return expect.fail(`the index is ${page.status}`);
    ids.push(...page.entries.map((entry) => (entry as { id: string }).id));
    cursor = page.nextCursor;
    if (cursor === null) break;
  }
  return ids;
}
