/**
 * B7, B5, issue 42 item 3: a page edge inside a run of equal timestamps. The only pagination
 * test advanced the clock between sessions, so an index whose cursor kept only `updatedAt`
 * (and skipped the rest of a tie) passed. Here sessions share `updatedAt` in runs, and
 * documents are written in bursts (one instant for an adapter that orders by write time),
 * with ids that sort differently under byte order and a case-insensitive collation; every
 * page size puts edges inside those runs, and every entry must come once.
 */
import { expect } from 'vitest';
import type { SpecRegistrar } from '../harness/suite.js';

/** Suffixes whose byte order (- 0 A B Z _ a b z) is not their case-insensitive order. */
const SUFFIXES = ['b', 'A', '_x', 'z', '-y', 'B', '0', 'a', 'Z', 'ab', 'a-b', 'a_b'] as const;
/** How many sessions share each `updatedAt`, newest run last. */
const RUNS = [3, 1, 3, 2] as const;
const PAGE_SIZES = [1, 2, 3, 4, 5, 7] as const;

const byteOrder = (left: string, right: string) => (left < right ? -1 : left > right ? 1 : 0);

export function definePageEdgeTests(suite: SpecRegistrar): void {
  // An adapter with case-insensitive ids (a declared A1:case gap) cannot hold both `a` and `A`.
  const caseInsensitive = suite.context.capabilities.gaps.some(
    (gap) => gap.clause === 'A1' || gap.clause === 'A1:case',
  );
  const suffixes = caseInsensitive
    ? SUFFIXES.filter((suffix) => suffix === suffix.toLowerCase())
    : SUFFIXES;
  suite.test(
    'B7',
    'list() pages whose edges fall inside runs of equal updatedAt visit every session once, newest first, ties by id',
    async (env) => {
      const opened = await env.openStore();
      const base = env.id('tie');
      const created: Array<{ id: string; updatedAt: number }> = [];
      let suffix = 0;
      for (const length of RUNS) {
        // One run: created at one instant, in an order that is not the order of their ids.
        for (let index = 0; index < length; index++) {
          const id = `${base}${suffixes[suffix++ % suffixes.length]}`;
          const session = await opened.store.create({ id, title: id }, { fsync: true });
          created.push({ id, updatedAt: session.updatedAt });
        }
        await env.clock.advance(1000);
      }
      const expected = [...created]
        .sort((left, right) => right.updatedAt - left.updatedAt || byteOrder(left.id, right.id))
        .map((entry) => entry.id);
      for (const store of [opened.store, (await env.openStore()).store]) {
        for (const limit of PAGE_SIZES) {
          const seen: string[] = [];
          let cursor: string | null = null;
          for (let pages = 0; pages < 100; pages++) {
            const page = await store.list({ cursor, limit });
            expect(page.sessions.length).toBeLessThanOrEqual(limit);
            seen.push(
              ...page.sessions.map((entry) => entry.id).filter((id) => id.startsWith(base)),
            );
            cursor = page.nextCursor;
            if (cursor === null) break;
          }
          expect(seen, `pages of ${limit}`).toEqual(expected);
        }
      }
    },
  );

  suite.test(
    'B5',
    'listDocuments pages whose edges fall inside a burst of writes visit every id once, with and without a prefix',
    async (env) => {
      const raw = await env.rawAdapter();
      const base = env.id('tie');
      const ids = suffixes.map((suffix) => `${base}${suffix}`);
      // One burst: written at once, so an adapter that orders by write time sees ties.
      const written = await Promise.all(
        ids.map((id) =>
          raw.putDocument(
            'lifecycle',
            id,
            { kind: 'full', revision: 1, text: '{"tie":true}' },
            { expectedRevision: null, durable: false },
          ),
        ),
      );
      expect(written.every((result) => result.ok)).toBe(true);
      const reader = await env.rawAdapter();
      for (const prefix of [base, undefined]) {
        for (const limit of PAGE_SIZES) {
          const seen: string[] = [];
          let cursor: string | null = null;
          for (let pages = 0; pages < 200; pages++) {
            const page = await reader.listDocuments('lifecycle', {
              cursor,
              limit,
              ...(prefix === undefined ? {} : { prefix }),
            });
            expect(page.ids.length).toBeLessThanOrEqual(limit);
            seen.push(...page.ids.filter((id) => id.startsWith(base)));
            cursor = page.nextCursor;
            if (cursor === null) break;
          }
          expect(
            [...seen].sort(byteOrder),
            `pages of ${limit}${prefix === undefined ? '' : ' with a prefix'}: each id once`,
          ).toEqual([...ids].sort(byteOrder));
        }
      }
    },
  );
}
