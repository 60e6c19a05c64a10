import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { s3Adapter } from '../src/index.js';
import { KeyLayout } from '../src/keys.js';
import {
  openStore,
  type S3Fixture,
  startFixture,
  uniquePrefix,
  userMessage,
} from './helpers/s3-fixture.js';

/**
 * H1, B8 (issue 35): a prefix is a namespace of its own, nested prefixes included. A store
 * on `<p>` never lists, reads or removes a key of a store on `<p>/journal`, `<p>/index/x`…,
 * and the other way round. Before the fix a delete of session `doc` on `<p>` removed the
 * ranges `<p>/journal/doc/` and `<p>/index/doc/`: every document of a store on
 * `<p>/journal` or `<p>/index`.
 */
let fixture: S3Fixture;
const closers: Array<() => Promise<void>> = [];

beforeAll(async () => {
  fixture = await startFixture();
});
afterAll(async () => {
  for (const close of closers.splice(0)) await close();
  await fixture?.dispose();
});

function storeOn(prefix: string) {
  const opened = openStore({ ...fixture.options('unused'), prefix });
  closers.push(opened.close);
  return opened;
}

function adapterOn(prefix: string) {
  const adapter = s3Adapter({ ...fixture.options('unused'), prefix });
  closers.push(() => adapter.close());
  return adapter;
}

/** A session with one message and a completed run with one event. */
async function seed(store: ReturnType<typeof storeOn>['store'], id: string): Promise<string> {
  const session = await store.create({ id, title: `title of ${id}` }, { fsync: true });
  session.messages.push(userMessage(`m-${id}`, `kept ${id}`));
  await store.save(session, { fsync: true });
  const run = await store.beginRun(id, { userMessage: { role: 'user', content: 'q' } });
  await run.append({ type: 'token', data: { text: `token of ${id}` } });
  await run.complete();
  return run.runId;
}

/** Read back by a new store on `prefix` (no cache): the session, its entry, its run. */
async function expectIntact(prefix: string, id: string, runId: string): Promise<void> {
  const { store } = storeOn(prefix);
  const label = prefix;
  const loaded = await store.load(id);
  expect(
    loaded.messages.some((message) => message.content === `kept ${id}`),
    `${label}: ${id}`,
  ).toBe(true);
  expect(
    (await store.list()).sessions.map((entry) => entry.id),
    `${label}: listed`,
  ).toContain(id);
  expect(await store.listRuns(id), `${label}: runs`).toEqual([runId]);
  const journal = await store.readJournal(id, runId);
  expect(journal.records.length, `${label}: journal`).toBeGreaterThan(1);
}

describe('nested prefixes are disjoint namespaces (H1, B8)', () => {
  it('H1, B8: a delete of a session the outer store never had leaves the stores on <p>/journal and <p>/index whole (issue 35)', async () => {
    const outerPrefix = uniquePrefix('nested');
    const outer = storeOn(outerPrefix);
    const nested = ['journal', 'index', 'doc', 'quarantine'].map((segment) => ({
      segment,
      opened: storeOn(`${outerPrefix}/${segment}`),
      runId: '',
    }));
    for (const entry of nested) entry.runId = await seed(entry.opened.store, 'x');
    const ownRun = await seed(outer.store, 'own');
    for (const id of ['doc', 'index', 'journal', 'quarantine', 'x']) {
      expect(await outer.store.delete(id), `the outer store never had ${id}`).toBe(false);
      expect(await outer.store.listRuns(id), `no run of ${id} on the outer prefix`).toEqual([]);
    }
    expect((await outer.store.list()).sessions.map((entry) => entry.id)).toEqual(['own']);
    expect(await outer.store.quarantined()).toEqual([]);
    for (const { segment, runId } of nested) {
      await expectIntact(`${outerPrefix}/${segment}`, 'x', runId);
    }
    // And the other way round: what the nested stores delete is theirs alone.
    for (const { opened } of nested) {
      for (const id of ['own', 'x', 'doc']) await opened.store.delete(id);
    }
    await expectIntact(outerPrefix, 'own', ownRun);
  });

  it("H1, B8: a store on <p>/journal/<id> or <p>/index/<id> survives the outer store's delete of <id>, its index rebuild and its listings", async () => {
    const outerPrefix = uniquePrefix('nested-id');
    const outer = storeOn(outerPrefix);
    const victim = 'victim';
    const nested = ['journal', 'index', 'doc/sessions', 'quarantine/sessions'].map((segment) => ({
      prefix: `${outerPrefix}/${segment}/${victim}`,
      opened: storeOn(`${outerPrefix}/${segment}/${victim}`),
      runId: '',
    }));
    for (const entry of nested) entry.runId = await seed(entry.opened.store, victim);
    const ownRun = await seed(outer.store, 'own');
    const raw = adapterOn(outerPrefix);
    await raw.open();
    expect(await raw.listLogs(victim)).toEqual([]);
    expect((await raw.listDocuments('sessions', { cursor: null, limit: 100 })).ids).toEqual([
      'own',
    ]);
    expect(await outer.store.delete(victim)).toBe(false);
    await raw.replaceIndex([], { durable: true });
    await raw.deleteLogs(victim, { durable: true });
    await raw.deleteIndexEntry(victim, { durable: true });
    expect(await raw.listQuarantined()).toEqual([]);
    for (const { prefix, runId } of nested) await expectIntact(prefix, victim, runId);
    expect(await outer.store.listRuns('own')).toEqual([ownRun]);
  });

  it('H1: the outer store neither lists nor reads what a nested store quarantined (A2)', async () => {
    const outerPrefix = uniquePrefix('nested-quarantine');
    const nestedPrefix = `${outerPrefix}/quarantine/sessions/q`;
    const outer = adapterOn(outerPrefix);
    const nested = adapterOn(nestedPrefix);
    await outer.open();
    await nested.open();
    const written = await nested.putDocument(
      'sessions',
      'broken',
      { kind: 'full', revision: 1, text: '{"not":"a session"' },
      { expectedRevision: null, durable: true },
    );
    expect(written.ok).toBe(true);
    const location = await nested.quarantineDocument('sessions', 'broken', 'A2 test');
    expect(await nested.readQuarantined(location)).toBe('{"not":"a session"');
    expect(await outer.listQuarantined()).toEqual([]);
    expect(await outer.readQuarantined(location)).toBeNull();
    // A location of the outer store's own shape is still read.
    await outer.putDocument(
      'sessions',
      'own',
      { kind: 'full', revision: 1, text: 'bytes' },
      { expectedRevision: null, durable: true },
    );
    const own = await outer.quarantineDocument('sessions', 'own', 'A2 test');
    expect(await outer.readQuarantined(own)).toBe('bytes');
    expect((await outer.listQuarantined()).map((entry) => entry.id)).toEqual(['own']);
    expect((await nested.listQuarantined()).map((entry) => entry.id)).toEqual(['broken']);
  });

  it('H1: key parsing accepts only the keys of its own layout, at their own depth', () => {
    const keys = new KeyLayout('p');
    const nested = new KeyLayout('p/journal');
    // A nested store's document is never taken for a journal segment's run of the outer one.
    expect(keys.parseSegmentKey('doc', nested.document('sessions', 'x'))).toBeNull();
    expect(keys.parseSegmentKey('s', keys.segment('s', 'r', 7))).toEqual({
      runId: 'r',
      firstSequence: 7,
    });
    expect(keys.documentId('sessions', `${keys.documentPrefix('sessions')}x/doc/sessions/y`)).toBe(
      null,
    );
    expect(keys.documentId('sessions', keys.document('sessions', 'y'))).toBe('y');
    const quarantined = keys.quarantined('sessions', 'y', '000001700000000-0a1b2c3d');
    expect(keys.parseQuarantined(quarantined)).toEqual({ collection: 'sessions', id: 'y' });
    expect(
      keys.parseQuarantined(
        new KeyLayout('p/quarantine/sessions/z').quarantined('runs', 'r', '000001700000000-00'),
      ),
    ).toBeNull();
    // The probe's scratch key can never be read as a segment, an entry or a quarantined copy.
    expect(keys.probe('0123456789012345')).toBe('p/probe/scratch-0123456789012345');
  });
});
