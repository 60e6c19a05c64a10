/**
 * B5, B8: a listing by prefix lists only that prefix. Issue 24: an adapter whose
 * `listDocuments` ignored `prefix` passed every test, while `retainedRevisions('b')`
 * returned session a's revision and `delete('a')` deleted b's retained revisions. Core
 * re-checks the prefix of every listed id too (packages/core/src/adapter/listed-ids.ts); the
 * adapter-level test below is what catches the adapter itself.
 */
import { expect } from 'vitest';
import type { TestEnvironment } from '../harness/environment.js';
import type { SpecRegistrar } from '../harness/suite.js';

/** Plants a retained revision document `<sessionId>.<revision>` (its text is not read). */
async function plantRetained(env: TestEnvironment, sessionId: string, revision: number) {
  const raw = await env.rawAdapter();
  const result = await raw.putDocument(
    'revisions',
    `${sessionId}.${revision}`,
    { kind: 'full', revision: 1, text: '{"planted":true}' },
    { expectedRevision: null, durable: true },
  );
  expect(result.ok).toBe(true);
}

async function listAll(env: TestEnvironment, prefix: string): Promise<string[]> {
  const raw = await env.rawAdapter();
  const ids: string[] = [];
  let cursor: string | null = null;
  do {
    const page = await raw.listDocuments('revisions', { prefix, cursor, limit: 2 });
    ids.push(...page.ids);
    cursor = page.nextCursor;
  } while (cursor !== null);
  return ids.sort();
}

export function defineListingPrefixTests(suite: SpecRegistrar): void {
  suite.test(
    'B5',
    'listDocuments with a prefix lists exactly the ids that start with it, across pages',
    async (env) => {
      // `s1` is a string prefix of `s10`: only the "." after the session id keeps them apart.
      const base = env.id();
      const [first, second] = [`${base}1`, `${base}10`];
      for (const revision of [1, 2, 3]) await plantRetained(env, first, revision);
      for (const revision of [1, 4]) await plantRetained(env, second, revision);
      expect(await listAll(env, `${first}.`)).toEqual([`${first}.1`, `${first}.2`, `${first}.3`]);
      expect(await listAll(env, `${second}.`)).toEqual([`${second}.1`, `${second}.4`]);
      expect(await listAll(env, `${env.id()}.`)).toEqual([]);
    },
  );

  suite.test(
    'B8',
    "retainedRevisions and delete of one session never touch another session's revisions",
    async (env) => {
      const { store } = await env.openStore();
      const [left, right] = [env.id(), env.id()];
      await store.create({ id: left }, { fsync: true });
      await store.create({ id: right }, { fsync: true });
      await plantRetained(env, left, 2);
      await plantRetained(env, right, 3);
      expect(await store.retainedRevisions(right)).toEqual([3]);
      await store.delete(left);
      const raw = await env.rawAdapter();
      expect(await raw.hasDocument('revisions', `${right}.3`), "right's revision").toBe(true);
      expect(await raw.hasDocument('revisions', `${left}.2`), "left's revision").toBe(false);
      expect(await store.retainedRevisions(right)).toEqual([3]);
    },
  );
}
