/**
 * H1, issue 22: every adapter stores every document collection of core's `COLLECTIONS`, not
 * only the three core used first. `runs` (where a run lives, found by its run id),
 * `checkpoints` and `checkpoint-writes` (the LangGraph saver's documents, ids of dotted
 * segments whose first segment groups one thread) get the same primitives as sessions:
 * conditional writes, prefix listings, deletes and quarantine, each collection apart from
 * the others, and a typed InvalidIdError for an id of the wrong shape. The tests talk to the
 * adapter directly; the id shapes are documented on `COLLECTIONS` in
 * packages/core/src/adapter/collections.ts.
 */
import {
  COLLECTIONS,
  type Collection,
  InvalidIdError,
  MAX_DOTTED_ID_LENGTH,
  type StorageAdapter,
} from '@keepsake/core';
import { expect } from 'vitest';
import type { TestEnvironment } from '../harness/environment.js';
import { expectTypedError } from '../harness/fixtures.js';
import type { SpecRegistrar } from '../harness/suite.js';

/** The collections this file is about: core's first three are covered by every other area. */
const NEW_COLLECTIONS = ['runs', 'checkpoints', 'checkpoint-writes'] as const;

const full = (revision: number, text: string) => ({ kind: 'full' as const, revision, text });
const durable = { durable: true } as const;

/** A valid id of `collection` built from a unique base (a dotted one where it may be). */
function idIn(collection: Collection, base: string): string {
  if (collection === 'revisions') return `${base}.7`;
  if (collection === 'checkpoints') return `${base}.ns.cp-1`;
  if (collection === 'checkpoint-writes') return `${base}.ns.cp-1.task-1.0`;
  return base;
}

async function listAll(
  adapter: StorageAdapter,
  collection: Collection,
  prefix?: string,
): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | null = null;
  do {
    const page = await adapter.listDocuments(collection, {
      ...(prefix === undefined ? {} : { prefix }),
      cursor,
      limit: 2,
    });
    ids.push(...page.ids);
    cursor = page.nextCursor;
  } while (cursor !== null);
  return ids.sort();
}

async function plant(adapter: StorageAdapter, collection: Collection, id: string, text: string) {
  const result = await adapter.putDocument(collection, id, full(1, text), {
    expectedRevision: null,
    durable: true,
  });
  expect(result, `${collection}/${id}`).toEqual({ ok: true });
}

/** Ids that must be refused in each collection (A1: nothing can escape a path or a key). */
function badIds(collection: Collection): string[] {
  const common = ['', 'a/b', '../x', 'a b', 'a:b', '{x}', 'a*', 'ü'];
  switch (collection) {
    case 'revisions':
      return [...common, 'abc', 'a.', '.1', 'a.01', 'a.b.1', `${'x'.repeat(129)}.1`];
    case 'checkpoints':
    case 'checkpoint-writes':
      return [
        ...common,
        '.a',
        'a.',
        'a..b',
        'a.b.c.d.e.f',
        'x'.repeat(129),
        `${'x'.repeat(100)}.${'y'.repeat(MAX_DOTTED_ID_LENGTH - 100)}`,
      ];
    default:
      return [...common, 'a.b', 'x'.repeat(129)];
  }
}

export function defineCollectionTests(suite: SpecRegistrar): void {
  suite.test(
    'H1',
    'adapter: run records, checkpoints and checkpoint writes are written conditionally, read, listed and deleted',
    async (env) => {
      const raw = await env.rawAdapter();
      for (const collection of NEW_COLLECTIONS) {
        const id = idIn(collection, env.id());
        const label = `${collection}/${id}`;
        expect(await raw.getDocument(collection, id), label).toBeNull();
        expect(await raw.hasDocument(collection, id), label).toBe(false);
        await plant(raw, collection, id, '{"v":1,"text":"é ✓ \\u0000"}');
        // B4: a second create and a stale revision are refused with the current revision.
        expect(
          await raw.putDocument(collection, id, full(1, '{"v":"other"}'), {
            expectedRevision: null,
            durable: true,
          }),
          label,
        ).toEqual({ ok: false, currentRevision: 1 });
        expect(
          await raw.putDocument(collection, id, full(2, '{"v":2}'), {
            expectedRevision: 1,
            durable: true,
          }),
          label,
        ).toEqual({ ok: true });
        expect(
          await raw.putDocument(collection, id, full(3, '{"v":"stale"}'), {
            expectedRevision: 1,
            durable: true,
          }),
          label,
        ).toEqual({ ok: false, currentRevision: 2 });
        // Another adapter of the same backend reads what this one wrote.
        const reader = await env.rawAdapter();
        expect(await reader.getDocument(collection, id), label).toEqual({
          revision: 2,
          base: '{"v":2}',
          deltas: [],
        });
        expect(await reader.hasDocument(collection, id), label).toBe(true);
        expect(await listAll(reader, collection), label).toEqual([id]);
        expect(
          await raw.deleteDocument(collection, id, { expectedRevision: 1, durable: true }),
          label,
        ).toEqual({ ok: false, currentRevision: 2 });
        expect(
          await raw.deleteDocument(collection, id, { expectedRevision: 2, durable: true }),
          label,
        ).toEqual({ ok: true });
        expect(await raw.getDocument(collection, id), label).toBeNull();
        expect(await raw.hasDocument(collection, id), label).toBe(false);
        expect(await listAll(raw, collection), label).toEqual([]);
        expect(await raw.deleteDocument(collection, id, durable), label).toEqual({ ok: true });
      }
    },
  );

  suite.test(
    'H1',
    "adapter: listDocuments with a prefix lists exactly one thread's checkpoints and one checkpoint's writes, across pages",
    async (env) => {
      const raw = await env.rawAdapter();
      // `t1` is a string prefix of `t10`: only the "." after the thread keeps them apart.
      const base = env.id('t');
      const [thread, neighbour] = [`${base}1`, `${base}10`];
      const checkpoints = [`${thread}.ns.c1`, `${thread}.ns.c2`, `${thread}.ns.c3`, `${thread}.x`];
      const writes = [`${thread}.ns.c1.task.0`, `${thread}.ns.c1.task.1`, `${thread}.ns.c2.task.0`];
      for (const id of [...checkpoints, `${neighbour}.ns.c1`, thread]) {
        await plant(raw, 'checkpoints', id, '{"c":1}');
      }
      for (const id of [...writes, `${neighbour}.ns.c1.task.0`]) {
        await plant(raw, 'checkpoint-writes', id, '{"w":1}');
      }
      expect(await listAll(raw, 'checkpoints', `${thread}.`)).toEqual([...checkpoints].sort());
      expect(await listAll(raw, 'checkpoints', `${thread}.ns.`)).toEqual(checkpoints.slice(0, 3));
      expect(await listAll(raw, 'checkpoint-writes', `${thread}.ns.c1.`)).toEqual(
        writes.slice(0, 2),
      );
      expect(await listAll(raw, 'checkpoint-writes', `${thread}.`)).toEqual([...writes].sort());
      expect(await listAll(raw, 'checkpoints', `${env.id('t')}.`)).toEqual([]);
      expect(await listAll(raw, 'checkpoints')).toEqual(
        [...checkpoints, `${neighbour}.ns.c1`, thread].sort(),
      );
      const runs = [env.id('r'), env.id('r'), env.id('r')];
      for (const runId of runs) await plant(raw, 'runs', runId, '{"sessionId":"s"}');
      expect(await listAll(raw, 'runs')).toEqual([...runs].sort());
      expect(await listAll(raw, 'runs', runs[1])).toEqual([runs[1]]);
    },
  );

  suite.test(
    'H1',
    'adapter: the same id in two collections is two documents (write, list, delete and quarantine one, the others stay)',
    async (env) => {
      const raw = await env.rawAdapter();
      const id = env.id();
      // A plain id is valid in every collection but `revisions`; `<id>.1` is valid in
      // `revisions`, `checkpoints` and `checkpoint-writes`.
      const plain: readonly Collection[] = COLLECTIONS.filter(
        (collection) => collection !== 'revisions',
      );
      const dotted = ['revisions', 'checkpoints', 'checkpoint-writes'] as const;
      for (const collection of plain) await plant(raw, collection, id, `{"in":"${collection}"}`);
      for (const collection of dotted) {
        await plant(raw, collection, `${id}.1`, `{"dotted":"${collection}"}`);
      }
      const expectAll = async (gone: ReadonlyArray<readonly [Collection, string]>) => {
        const isGone = (collection: Collection, documentId: string) =>
          gone.some(([c, i]) => c === collection && i === documentId);
        for (const collection of plain) {
          const stored = await raw.getDocument(collection, id);
          if (isGone(collection, id)) expect(stored, `${collection}/${id}`).toBeNull();
          else expect(stored?.base, `${collection}/${id}`).toBe(`{"in":"${collection}"}`);
        }
        for (const collection of dotted) {
          const stored = await raw.getDocument(collection, `${id}.1`);
          if (isGone(collection, `${id}.1`)) expect(stored, `${collection}/${id}.1`).toBeNull();
          else expect(stored?.base, `${collection}/${id}.1`).toBe(`{"dotted":"${collection}"}`);
        }
        for (const collection of COLLECTIONS) {
          const expected = [
            ...(plain.includes(collection) && !isGone(collection, id) ? [id] : []),
            ...((dotted as readonly Collection[]).includes(collection) &&
            !isGone(collection, `${id}.1`)
              ? [`${id}.1`]
              : []),
          ].sort();
          expect(await listAll(raw, collection, id), collection).toEqual(expected);
        }
      };
      await expectAll([]);
      await raw.deleteDocument('runs', id, durable);
      await raw.quarantineDocument('checkpoints', `${id}.1`, 'isolation test');
      await raw.deleteDocument('lifecycle', id, durable);
      await expectAll([
        ['runs', id],
        ['checkpoints', `${id}.1`],
        ['lifecycle', id],
      ]);
      const quarantined = (await raw.listQuarantined()).map((entry) => [
        entry.collection,
        entry.id,
      ]);
      expect(quarantined).toEqual([['checkpoints', `${id}.1`]]);
    },
  );

  suite.test(
    'H1',
    'adapter: a run record, a checkpoint or a checkpoint write is quarantined with its bytes intact, and a fresh one may take its place',
    async (env) => {
      const raw = await env.rawAdapter();
      for (const collection of NEW_COLLECTIONS) {
        const id = idIn(collection, env.id());
        const text = `{"damaged":"${collection}" `;
        await plant(raw, collection, id, text);
        const reason = `${collection} does not parse`;
        const location = await raw.quarantineDocument(collection, id, reason);
        expect(typeof location, collection).toBe('string');
        expect(await raw.getDocument(collection, id), collection).toBeNull();
        expect(await raw.hasDocument(collection, id), collection).toBe(false);
        expect(await listAll(raw, collection, id), collection).toEqual([]);
        const entry = (await raw.listQuarantined()).find((item) => item.location === location);
        expect(entry, collection).toMatchObject({ collection, id, location, reason });
        if (raw.readQuarantined !== undefined) {
          expect(await raw.readQuarantined(location), collection).toBe(text);
        }
        await plant(raw, collection, id, '{"fresh":true}');
        expect((await raw.getDocument(collection, id))?.base, collection).toBe('{"fresh":true}');
      }
    },
  );

  suite.test(
    'H1',
    'adapter: an id of the wrong shape for its collection is refused with InvalidIdError, and nothing is stored',
    async (env) => {
      const raw = await env.rawAdapter();
      for (const collection of COLLECTIONS) {
        for (const id of badIds(collection)) {
          const label = `${collection}/${JSON.stringify(id.length > 40 ? `${id.slice(0, 40)}…` : id)}`;
          const calls: Array<() => Promise<unknown>> = [
            () => raw.getDocument(collection, id),
            () => raw.hasDocument(collection, id),
            () =>
              raw.putDocument(collection, id, full(1, '{}'), {
                expectedRevision: null,
                durable: true,
              }),
            () => raw.deleteDocument(collection, id, durable),
            () => raw.quarantineDocument(collection, id, 'bad id'),
          ];
          for (const call of calls) {
            const error = await expectTypedError(call, InvalidIdError);
            expect(error.code, label).toBe('invalid_id');
          }
        }
        expect(await listAll(raw, collection), collection).toEqual([]);
      }
      expect(await raw.listQuarantined()).toEqual([]);
    },
  );

  suite.test(
    'H1',
    'adapter: the longest dotted ids (5 segments, 160 characters, one segment of 128) round-trip',
    async (env) => {
      const raw = await env.rawAdapter();
      const longest = longestDottedId(env);
      const longSegment = `${env.id('t')}.${'S'.repeat(128)}`;
      for (const collection of ['checkpoints', 'checkpoint-writes'] as const) {
        for (const id of [longest, longSegment]) {
          await plant(raw, collection, id, '{"long":true}');
          expect((await raw.getDocument(collection, id))?.base, id).toBe('{"long":true}');
          expect(await listAll(raw, collection, id), id).toEqual([id]);
        }
      }
    },
  );
}

/** Five segments, exactly MAX_DOTTED_ID_LENGTH characters, mixed case (fs encodes case). */
function longestDottedId(env: TestEnvironment): string {
  const head = env.id('T');
  const rest = MAX_DOTTED_ID_LENGTH - head.length - 4;
  const segment = Math.floor(rest / 4);
  const last = rest - segment * 3;
  const id = [
    head,
    'A'.repeat(segment),
    'b'.repeat(segment),
    'C'.repeat(segment),
    'd'.repeat(last),
  ].join('.');
  expect(id.length).toBe(MAX_DOTTED_ID_LENGTH);
  return id;
}
