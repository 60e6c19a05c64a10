/**
 * The semantics of single primitives that core relies on but that no store-level test
 * pinned (issue 24, item 8); each is documented on `StorageAdapterV1` in
 * packages/core/src/adapter/adapter.ts. The tests talk to the adapter directly.
 */
import { KeepsakeError } from '@keepsake/core';
import { expect } from 'vitest';
import type { SpecRegistrar } from '../harness/suite.js';

const doc = (revision: number) => ({ kind: 'full' as const, revision, text: `{"r":${revision}}` });

export function defineAdapterPrimitiveTests(suite: SpecRegistrar): void {
  suite.test(
    'B4',
    'adapter: deleteDocument with a stale expectedRevision deletes nothing and reports the current one',
    async (env) => {
      const raw = await env.rawAdapter();
      const id = env.id();
      await raw.putDocument('lifecycle', id, doc(1), { expectedRevision: null, durable: true });
      await raw.putDocument('lifecycle', id, doc(2), { expectedRevision: 1, durable: true });
      const refused = await raw.deleteDocument('lifecycle', id, {
        expectedRevision: 1,
        durable: true,
      });
      expect(refused).toEqual({ ok: false, currentRevision: 2 });
      expect((await raw.getDocument('lifecycle', id))?.revision).toBe(2);
      expect(
        await raw.deleteDocument('lifecycle', id, { expectedRevision: 2, durable: true }),
      ).toEqual({
        ok: true,
      });
      expect(await raw.getDocument('lifecycle', id)).toBeNull();
    },
  );

  suite.test(
    'B8',
    'adapter: after delete() the index holds no entry for the session',
    async (env) => {
      const { store } = await env.openStore();
      const [kept, deleted] = [env.id(), env.id()];
      await store.create({ id: kept }, { fsync: true });
      await store.create({ id: deleted }, { fsync: true });
      await store.delete(deleted);
      const raw = await env.rawAdapter();
      const ids: string[] = [];
      let cursor: string | null = null;
      do {
        const page = await raw.listIndex({ cursor, limit: 100 });
        expect(page.status).toBe('ok');
        if (page.status !== 'ok') return;
        ids.push(...page.entries.map((entry) => (entry as { id: string }).id));
        cursor = page.nextCursor;
      } while (cursor !== null);
      expect(ids).toContain(kept);
      expect(ids).not.toContain(deleted);
    },
  );

  suite.test(
    'E2',
    'adapter: an empty appendLog stores nothing: it resolves { ok: true } or rejects typed',
    async (env) => {
      const raw = await env.rawAdapter();
      const [sessionId, runId] = [env.id(), env.id('run')];
      // Core never appends an empty batch; an adapter may refuse one or accept it as a no-op.
      const outcome = await raw.appendLog(sessionId, runId, [], { durability: 'none' }).then(
        (result) => result,
        (error: unknown) => error,
      );
      if (outcome instanceof Error)
        expect(KeepsakeError.isInstance(outcome), String(outcome)).toBe(true);
      else expect(outcome).toEqual({ ok: true });
      const read = await raw.readLog(sessionId, runId, { afterSequence: 0, limit: 10 });
      expect(read.records).toEqual([]);
      // The next append still starts the journal at sequence 1.
      const first = [{ sequence: 1, text: '{"type":"token"}' }];
      expect(await raw.appendLog(sessionId, runId, first, { durability: 'none' })).toEqual({
        ok: true,
      });
    },
  );

  suite.test(
    'A2',
    'adapter: quarantining a document that does not exist resolves with a location and moves nothing',
    async (env) => {
      const raw = await env.rawAdapter();
      const id = env.id();
      const location = await raw.quarantineDocument('sessions', id, 'gone before the quarantine');
      expect(typeof location).toBe('string');
      expect(await raw.getDocument('sessions', id)).toBeNull();
      if (raw.readQuarantined !== undefined) expect(await raw.readQuarantined(location)).toBeNull();
    },
  );
  const removeIndex = suite.context.initializer.removeIndex;
  if (removeIndex !== undefined) {
    suite.test(
      'B7',
      'adapter: a missing index stays missing through putIndexEntry and deleteIndexEntry',
      async (env) => {
        const opened = await env.openStore();
        const [first, second] = [env.id(), env.id()];
        await opened.store.create({ id: first, title: 'first' }, { fsync: true });
        await opened.store.create({ id: second, title: 'second' }, { fsync: true });
        const { sessions } = await opened.store.list({ limit: 1000 });
        const summary = sessions.find((entry) => entry.id === second)!;
        await env.closeStore(opened);
        await removeIndex.call(suite.context.initializer, env.namespace);
        const raw = await env.rawAdapter();
        expect((await raw.listIndex({ cursor: null, limit: 10 })).status).toBe('missing');
        await raw.putIndexEntry(summary, { durable: true });
        await raw.deleteIndexEntry(first, { durable: true });
        // An index holding only the entry just put would hide `first` from list().
        expect((await raw.listIndex({ cursor: null, limit: 10 })).status).toBe('missing');
      },
    );
  }
}
