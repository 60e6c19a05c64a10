/**
 * H1–H3: every declared capability is checked (and gaps are well formed), the keys of
 * one session work together, and data migrates between backends with nothing lost.
 *
 * One file per contract area, so docs/contract.md links each clause to its tests; that
 * is why these files are longer than the house's usual ~300 lines.
 */
import {
  type DurabilityLevel,
  memoryAdapter,
  migrateBackend,
  RevisionConflictError,
  type SessionStore,
} from '@keepsake/core';
import { expect } from 'vitest';
import { CLAUSE_IDS } from '../clauses.js';
import type { OpenedStore, TestEnvironment } from '../harness/environment.js';
import { contentsOf, expectTypedError, textMessage, userInput } from '../harness/fixtures.js';
import type { SpecRegistrar } from '../harness/suite.js';
import { defineCollectionTests } from './h-collections.js';
import { defineNestedPrefixTests } from './h-nested-prefixes.js';
import { defineSharedAcrossProcessesTests } from './h-shared-across-processes.js';

const DURABILITY_LEVELS: readonly DurabilityLevel[] = [
  'process',
  'fsync',
  'server-fsync',
  'replicated',
  'acknowledged',
];

const BOOLEAN_CAPABILITIES = [
  'conditionalWrites',
  'sharedAcrossProcesses',
  'appendDeltas',
  'nativeAppend',
  'groupCommit',
  'clusterSafeKeys',
] as const;

export function defineCapabilities(suite: SpecRegistrar): void {
  const { capabilities } = suite.context;
  defineSharedAcrossProcessesTests(suite);
  defineCollectionTests(suite);
  defineNestedPrefixTests(suite);

  suite.test('H1', 'the adapter declares a well-formed v1 capabilities object', async (env) => {
    const adapter = await env.rawAdapter();
    expect(adapter.specificationVersion).toBe('v1');
    expect(typeof adapter.name).toBe('string');
    expect(adapter.name.length).toBeGreaterThan(0);
    const declared = adapter.capabilities;
    expect(DURABILITY_LEVELS).toContain(declared.durability);
    for (const name of BOOLEAN_CAPABILITIES) expect(typeof declared[name], name).toBe('boolean');
    expect(Array.isArray(declared.gaps)).toBe(true);
    const seen = new Set<string>();
    for (const gap of declared.gaps) {
      const [clause, key, ...rest] = gap.clause.split(':');
      expect(CLAUSE_IDS as readonly string[], `gap ${gap.clause} names a clause`).toContain(clause);
      expect(rest, `gap ${gap.clause}`).toEqual([]);
      if (key !== undefined) expect(key, `gap ${gap.clause}`).toMatch(/^[\w-]+$/);
      expect(gap.reason.trim(), `gap ${gap.clause} has a reason`).not.toBe('');
      expect(seen.has(gap.clause), `gap ${gap.clause} declared once`).toBe(false);
      seen.add(gap.clause);
    }
  });

  if (capabilities.conditionalWrites) {
    suite.test(
      'H1',
      'conditionalWrites: a stale expected revision is refused with the current one, across two adapters',
      async (env) => {
        const first = await env.rawAdapter();
        const second = await env.rawAdapter();
        const id = env.id();
        const write = (revision: number) => ({
          kind: 'full' as const,
          revision,
          text: `{"v":${revision}}`,
        });
        expect(
          await first.putDocument('sessions', id, write(1), {
            expectedRevision: null,
            durable: false,
          }),
        ).toEqual({ ok: true });
        expect(
          await second.putDocument('sessions', id, write(1), {
            expectedRevision: null,
            durable: false,
          }),
        ).toEqual({ ok: false, currentRevision: 1 });
        expect(
          await second.putDocument('sessions', id, write(2), {
            expectedRevision: 1,
            durable: false,
          }),
        ).toEqual({ ok: true });
        expect(
          await first.putDocument('sessions', id, write(2), {
            expectedRevision: 1,
            durable: false,
          }),
        ).toEqual({ ok: false, currentRevision: 2 });
        const race = await Promise.all(
          [first, second, first, second].map((adapter) =>
            adapter.putDocument('sessions', id, write(3), { expectedRevision: 2, durable: true }),
          ),
        );
        expect(race.filter((result) => result.ok)).toHaveLength(1);
        expect((await first.getDocument('sessions', id))?.revision).toBe(3);
        expect(
          await first.deleteDocument('sessions', id, { expectedRevision: 2, durable: false }),
        ).toEqual({ ok: false, currentRevision: 3 });
        expect((await second.getDocument('sessions', id))?.base).toBe('{"v":3}');
      },
    );
  } else {
    suite.test('H1', 'without conditionalWrites the adapter declares the B4 gap', async () => {
      expect(capabilities.gaps.map((gap) => gap.clause)).toContain('B4');
    });
  }

  if (capabilities.appendDeltas) {
    suite.test(
      'H1',
      'appendDeltas: an append-only save sends a delta write, and reads return base plus deltas',
      async (env) => {
        const opened = await env.openStore({ deltas: { compactAfter: 2, compactRatio: 0 } });
        const { store, adapter } = opened;
        const session = await store.create({
          id: env.id(),
          messages: [textMessage(env, 'user', 'base')],
        });
        const kinds: string[] = [];
        for (const text of ['one', 'two', 'three']) {
          session.messages.push(textMessage(env, 'assistant', text));
          adapter.clearCalls();
          await store.save(session);
          const write = adapter.callsTo('putDocument').find((call) => call.args[1] === session.id);
          kinds.push((write!.args[2] as { kind: string }).kind);
        }
        expect(kinds).toEqual(['delta', 'delta', 'full']);
        session.messages.push(textMessage(env, 'assistant', 'four'));
        await store.save(session);
        const stored = await adapter.inner.getDocument('sessions', session.id);
        expect(stored!.deltas).toHaveLength(1);
        // A shrink is never a delta.
        session.messages.splice(0, 1);
        adapter.clearCalls();
        await store.save(session, { allowShrink: true });
        const shrink = adapter.callsTo('putDocument').find((call) => call.args[0] === 'sessions');
        expect((shrink!.args[2] as { kind: string }).kind).toBe('full');
        const reader = await env.openStore();
        expect(contentsOf(await reader.store.load(session.id))).toEqual([
          'one',
          'two',
          'three',
          'four',
        ]);
      },
    );
    suite.test(
      'A3',
      'appendDeltas: a delta that would pass maxDocumentBytes is written in full when the document fits',
      async (env) => {
        // Deltas repeat the head: a heavy head makes base + deltas pass the limit long
        // before the document itself does.
        const { store, adapter } = await env.openStore({
          limits: { maxDocumentBytes: 4_000 },
          deltas: { compactAfter: 1_000, compactRatio: 0 },
        });
        const session = await store.create({ id: env.id(), metadata: { note: 'n'.repeat(1_200) } });
        const kinds: string[] = [];
        for (const text of ['one', 'two', 'three']) {
          session.messages.push(textMessage(env, 'user', text));
          adapter.clearCalls();
          await store.save(session);
          const write = adapter.callsTo('putDocument').find((call) => call.args[1] === session.id);
          kinds.push((write!.args[2] as { kind: string }).kind);
        }
        expect(kinds).toEqual(['delta', 'full', 'delta']);
        const reader = await env.openStore();
        expect(contentsOf(await reader.store.load(session.id))).toEqual(['one', 'two', 'three']);
      },
    );

    suite.test(
      'H1',
      'appendDeltas: a full rewrite waits until the deltas weigh as much as the last full write',
      async (env) => {
        const { store, adapter } = await env.openStore({
          deltas: { compactAfter: 1, compactRatio: 1 },
        });
        const history = Array.from({ length: 20 }, (_, index) =>
          textMessage(env, index % 2 === 0 ? 'user' : 'assistant', `history ${index}`),
        );
        adapter.clearCalls();
        const session = await store.create({ id: env.id(), messages: history });
        const writeOf = () => {
          const call = adapter.callsTo('putDocument').find((each) => each.args[1] === session.id);
          return call!.args[2] as { kind: string; text: string };
        };
        const fullBytes = writeOf().text.length;
        let deltaBytes = 0;
        let lastDeltaBytes = 0;
        let deltas = 0;
        for (let index = 0; index < 200; index++) {
          session.messages.push(textMessage(env, 'user', `appended ${index}`));
          adapter.clearCalls();
          await store.save(session);
          const write = writeOf();
          if (write.kind === 'full') break;
          deltas++;
          lastDeltaBytes = write.text.length;
          deltaBytes += lastDeltaBytes;
        }
        // Each delta is a fraction of a 20-message document: several fit before it.
        expect(deltas).toBeGreaterThan(1);
        expect(deltas).toBeLessThan(200);
        expect(deltaBytes).toBeGreaterThanOrEqual(fullBytes);
        expect(deltaBytes - lastDeltaBytes).toBeLessThan(fullBytes);
        const reader = await env.openStore();
        expect((await reader.store.load(session.id)).messages).toHaveLength(20 + deltas + 1);
      },
    );
  } else {
    suite.test('H1', 'without appendDeltas the store sends only full writes', async (env) => {
      const { store, adapter } = await env.openStore();
      const session = await store.create({ id: env.id() });
      for (const text of ['one', 'two']) {
        session.messages.push(textMessage(env, 'user', text));
        await store.save(session);
      }
      const kinds = adapter
        .callsTo('putDocument')
        .map((call) => (call.args[2] as { kind: string }).kind);
      expect(kinds.every((kind) => kind === 'full')).toBe(true);
      expect((await adapter.inner.getDocument('sessions', session.id))!.deltas).toEqual([]);
    });
  }

  if (capabilities.indexWithDocument === true) {
    suite.test(
      'H1',
      'indexWithDocument: the index entry rides on the document write, only when it lands',
      async (env) => {
        const { store, adapter } = await env.openStore();
        const session = await store.create({ id: env.id(), title: 'first' }, { fsync: true });
        session.title = 'second';
        adapter.clearCalls();
        await store.save(session, { fsync: true });
        expect(adapter.callsTo('putIndexEntry')).toEqual([]);
        const carried = adapter.indexUpdates();
        expect(carried).toHaveLength(1);
        expect((carried[0]!.args[3] as { indexEntry: { title: string } }).indexEntry.title).toBe(
          'second',
        );
        const listed = async (title: string) =>
          (await store.list({ limit: 1000 })).sessions.some(
            (entry) => entry.id === session.id && entry.title === title,
          );
        expect(await listed('second')).toBe(true);
        // A conditional write that is refused must not touch the index.
        const rival = await env.openStore();
        const theirs = await rival.store.load(session.id);
        theirs.title = 'theirs';
        await rival.store.save(theirs, { fsync: true });
        session.title = 'refused';
        await expectTypedError(store.save(session), RevisionConflictError);
        expect(await listed('refused')).toBe(false);
        expect(await listed('theirs')).toBe(true);
      },
    );
  }

  suite.test(
    'H1',
    `durability "${capabilities.durability}": durable writes of every kind survive a crash`,
    async (env) => {
      const writer = await env.rawAdapter();
      const id = env.id();
      await writer.putDocument(
        'sessions',
        id,
        { kind: 'full', revision: 1, text: '{"a":1}' },
        { expectedRevision: null, durable: true },
      );
      await writer.putDocument(
        'lifecycle',
        id,
        { kind: 'full', revision: 1, text: '{"g":1}' },
        { expectedRevision: null, durable: true },
      );
      await writer.appendLog(id, 'run-1', [{ sequence: 1, text: '{"s":1}' }], {
        durability: 'each',
      });
      await writer.appendLog(id, 'run-1', [{ sequence: 2, text: '{"s":2}' }], {
        durability: 'group',
      });
      await suite.context.initializer.simulateCrash?.(env.namespace);
      const reader = await env.rawAdapter();
      expect((await reader.getDocument('sessions', id))?.base).toBe('{"a":1}');
      expect((await reader.getDocument('lifecycle', id))?.base).toBe('{"g":1}');
      const journal = await reader.readLog(id, 'run-1', { afterSequence: 0, limit: 10 });
      expect(journal.records.map((record) => record.text)).toEqual(['{"s":1}', '{"s":2}']);
    },
  );

  suite.test(
    'H1',
    `nativeAppend/groupCommit: concurrent group-durable appends all resolve, in order, and survive a crash`,
    async (env) => {
      const opened = await env.openStore({ journal: { durability: 'group' } });
      const session = await opened.store.create({ id: env.id() });
      const run = await opened.store.beginRun(session.id, { userMessage: userInput('go') });
      opened.adapter.clearCalls();
      const records = await Promise.all(
        Array.from({ length: 12 }, (_, index) =>
          run.append({ type: 'token', data: { text: `${index}` } }),
        ),
      );
      expect(records.map((record) => record.sequence)).toEqual(
        records.map((_, index) => index + 1),
      );
      // Each append sends only its own records, never the journal so far.
      for (const call of opened.adapter.callsTo('appendLog')) {
        expect((call.args[2] as unknown[]).length).toBeLessThanOrEqual(12);
      }
      const reopened = await env.restartAfterCrash(opened);
      const journal = await reopened.store.readJournal(session.id, run.runId);
      expect(journal.records.map((record) => record.data.text)).toEqual(
        records.map((_, index) => `${index}`),
      );
    },
  );

  suite.test(
    'H1',
    'two adapters of one namespace share its data; other namespaces are isolated',
    async (env) => {
      const first = await env.rawAdapter();
      const second = await env.rawAdapter();
      const elsewhere = await env.rawAdapter(env.otherNamespace());
      const id = env.id();
      await first.putDocument(
        'sessions',
        id,
        { kind: 'full', revision: 1, text: '{"x":1}' },
        { expectedRevision: null, durable: false },
      );
      await first.putIndexEntry(
        {
          id,
          title: 't',
          createdAt: 1,
          updatedAt: 1,
          messageCount: 0,
          pending: false,
          parentId: null,
          rotatedTo: null,
        },
        { durable: false },
      );
      await first.appendLog(id, 'run-1', [{ sequence: 1, text: '{}' }], { durability: 'none' });
      expect((await second.getDocument('sessions', id))?.revision).toBe(1);
      expect(await second.listLogs(id)).toEqual(['run-1']);
      const index = await second.listIndex({ cursor: null, limit: 100 });
      expect(
        index.status === 'ok' && index.entries.some((entry) => (entry as { id: string }).id === id),
      ).toBe(true);
      expect(await elsewhere.getDocument('sessions', id)).toBeNull();
      expect(await elsewhere.listLogs(id)).toEqual([]);
      const otherIndex = await elsewhere.listIndex({ cursor: null, limit: 100 });
      expect(otherIndex.status !== 'ok' || otherIndex.entries.length === 0).toBe(true);
    },
  );

  // H2's hash tags are adapter-physical (Redis key names): the Redis adapter tests them.
  // Every adapter must make the keys of one session work together in each operation.
  suite.test(
    'H2',
    `every key of one session works together (clusterSafeKeys: ${capabilities.clusterSafeKeys})`,
    async (env) => {
      const opened = await env.openStore();
      const { store } = opened;
      const session = await store.create({
        id: env.id(),
        messages: [textMessage(env, 'user', 'a'), textMessage(env, 'assistant', 'b')],
      });
      const run = await store.beginRun(session.id, { userMessage: userInput('q') });
      await run.append({ type: 'token', data: { text: 'answer' } });
      await run.complete();
      const live = await store.load(session.id);
      live.messages.splice(0, 1);
      await store.save(live, { allowShrink: true });
      const childId = env.id();
      await store.rename(session.id, childId);
      expect((await store.retainedRevisions(session.id)).length).toBeGreaterThan(0);
      expect(await store.lifecycle.hasUncommittedWork(session.id)).toBe(true);
      expect(await store.delete(session.id)).toBe(true);
      const raw = await env.rawAdapter();
      expect(await raw.getDocument('sessions', session.id)).toBeNull();
      expect(await raw.listLogs(session.id)).toEqual([]);
      expect(await raw.getDocument('lifecycle', session.id)).toBeNull();
      expect(contentsOf(await store.load(childId))).toEqual(['b', 'q', 'answer']);
    },
  );

  suite.test(
    'H3',
    'sessions, retained revisions, journals and lifecycle state migrate to another backend and back with nothing lost',
    async (env) => {
      const source = await env.openStore();
      const fixture = await populate(env, source.store);
      await env.closeStore(source);

      const sourceAdapter = await env.rawAdapter();
      const memory = memoryAdapter();
      const toMemory = await migrateBackend(sourceAdapter, memory);
      expect(toMemory.skippedCorrupt).toEqual([]);
      const memoryStore = env.openStoreOn(memory);
      await expectSameData(fixture, (await env.openStore()).store, memoryStore.store);

      const backNamespace = env.otherNamespace();
      const back = await env.rawAdapter(backNamespace);
      const fromMemory = await migrateBackend(memory, back);
      expect(fromMemory.documents).toEqual(toMemory.documents);
      expect(fromMemory.journalRecords).toBe(toMemory.journalRecords);
      const backStore: OpenedStore = await env.openStore({}, backNamespace);
      await expectSameData(fixture, memoryStore.store, backStore.store);
    },
  );
}

interface Fixture {
  ids: string[];
  shrunkId: string;
  runId: string;
  lifecycleId: string;
}

async function populate(env: TestEnvironment, store: SessionStore): Promise<Fixture> {
  const plain = await store.create({
    id: env.id(),
    title: 'plain',
    custom: { kept: true },
    metadata: { m: 1 },
  });
  for (const text of ['one', 'two', 'three']) {
    plain.messages.push(textMessage(env, 'user', text));
    await store.save(plain);
  }
  const shrunk = await store.create({
    id: env.id(),
    messages: [textMessage(env, 'user', 'x'), textMessage(env, 'user', 'y')],
  });
  shrunk.messages.splice(1, 1);
  await store.save(shrunk, { allowShrink: true });
  const run = await store.beginRun(plain.id, {
    userMessage: userInput('question'),
    runId: env.id('run'),
  });
  await run.append({ type: 'reasoning', data: { text: 'think' } });
  await run.append({ type: 'token', data: { text: 'answer' } });
  await run.complete();
  await store.lifecycle.markTurnCompleted(plain.id);
  const childId = env.id();
  await store.rename(shrunk.id, childId);
  return {
    ids: [plain.id, shrunk.id, childId],
    shrunkId: shrunk.id,
    runId: run.runId,
    lifecycleId: plain.id,
  };
}

async function expectSameData(
  fixture: Fixture,
  expected: SessionStore,
  actual: SessionStore,
): Promise<void> {
  for (const id of fixture.ids) {
    const left = await expected.load(id);
    const right = await actual.load(id);
    expect(JSON.parse(JSON.stringify(right)), id).toEqual(JSON.parse(JSON.stringify(left)));
  }
  const revisions = await expected.retainedRevisions(fixture.shrunkId);
  expect(revisions.length).toBeGreaterThan(0);
  expect(await actual.retainedRevisions(fixture.shrunkId)).toEqual(revisions);
  for (const revision of revisions) {
    expect(contentsOf(await actual.loadRetainedRevision(fixture.shrunkId, revision))).toEqual(
      contentsOf(await expected.loadRetainedRevision(fixture.shrunkId, revision)),
    );
  }
  const [plainId] = fixture.ids;
  expect(await actual.listRuns(plainId!)).toEqual(await expected.listRuns(plainId!));
  expect((await actual.readJournal(plainId!, fixture.runId)).records).toEqual(
    (await expected.readJournal(plainId!, fixture.runId)).records,
  );
  expect(await actual.runSummary(plainId!, fixture.runId)).toEqual(
    await expected.runSummary(plainId!, fixture.runId),
  );
  expect(await actual.lifecycle.hasUncommittedWork(fixture.lifecycleId)).toBe(
    await expected.lifecycle.hasUncommittedWork(fixture.lifecycleId),
  );
  const listed = async (store: SessionStore) =>
    (await store.list({ limit: 1000, includeRotated: true })).sessions.filter((entry) =>
      fixture.ids.includes(entry.id),
    );
  expect(await listed(actual)).toEqual(await listed(expected));
}
