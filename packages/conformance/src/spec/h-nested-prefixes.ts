/**
 * H1, B8 (issue 35): a namespace is disjoint from every other one, nested ones included.
 * The S3 adapter laid a prefix out as `<prefix>/doc/…`, `<prefix>/journal/<sessionId>/…`
 * and `<prefix>/index/<sessionId>/…`, and deleted whole key ranges: a delete of the session
 * `doc` on `srv` removed `srv/journal/doc/…`, every document of a store on `srv/journal`.
 * The reference server lays namespaces out as `<prefix>/<namespace>`, so nested namespaces
 * are what deployments make.
 *
 * Each test fills a namespace and namespaces nested in it (`<ns>/journal`,
 * `<ns>/index/<id>`…, named after the folders adapters lay a namespace out with), records
 * what every one holds through the adapter interface, lets one side delete sessions it never
 * had (and one it had), rebuild its index, list, and read the other side's quarantine
 * locations, and then compares every other namespace with its record. A nested namespace is
 * `<namespace>/<segment>`: initializers map a namespace to a prefix, a key prefix or a
 * directory by concatenation, so `/` nests wherever namespaces nest. An adapter whose
 * namespaces cannot nest declares the gap `H1:nested-namespaces` with its reason.
 */
import { COLLECTIONS, InvalidConfigError, type StorageAdapter } from '@keepsake/core';
import { expect } from 'vitest';
import type { OpenedStore, TestEnvironment } from '../harness/environment.js';
import { textMessage, userInput } from '../harness/fixtures.js';
import { seededRandom } from '../harness/seeded-random.js';
import type { SpecRegistrar } from '../harness/suite.js';

const GAP_ID = 'H1:nested-namespaces';

/** Names adapters lay a namespace out with (S3's folders, fs's directories, and kin). */
const LAYOUT_WORDS = ['doc', 'journal', 'journals', 'index', 'sessions', 'quarantine', 'wal'];
/** Run ids a namespace deletes the journals of, under sessions it never had. */
const RUN_WORDS = ['sessions', 'index', 'doc'];
/** Paths below which a nested namespace named after a session id sits (`<path>/<id>`). */
const SESSION_PATHS = ['journal', 'index', 'doc/sessions', 'quarantine/sessions'];
/** Nested namespaces of the randomized test, and its seed (KEEPSAKE_MODEL_SEED replays one). */
const RANDOM_NAMESPACES = 4;

/** What one namespace holds, as its adapter reports it; equal records, equal contents. */
interface Holding {
  readonly documents: readonly string[];
  readonly journals: readonly string[];
  readonly index: readonly string[];
  readonly quarantined: readonly string[];
}

interface Filled {
  readonly namespace: string;
  readonly opened: OpenedStore;
  /** Where its quarantined document went (A2). */
  readonly location: string;
  holding: Holding;
}

export function defineNestedPrefixTests(suite: SpecRegistrar): void {
  const timeoutMs = suite.context.testTimeoutMs * 6;

  suite.test(
    GAP_ID,
    'a delete of a session a store never had leaves the sessions of stores on <ns>/journal and <ns>/index whole (issue 35)',
    async (env) => {
      const outer = await openOn(env, env.namespace);
      const nested = await Promise.all(
        ['journal', 'index', 'doc'].map((segment) => openOn(env, `${env.namespace}/${segment}`)),
      );
      const id = env.id();
      for (const { store } of nested) {
        const session = await store.create({ id }, { fsync: true });
        session.messages.push(textMessage(env, 'user', `kept in ${id}`));
        await store.save(session, { fsync: true });
      }
      for (const word of ['doc', 'index', 'journal', id]) {
        expect(await outer.store.delete(word), `the store never had ${word}`).toBe(false);
      }
      for (const { namespace } of nested) {
        // A new store on the namespace: nothing comes from a cache.
        const { store } = await openOn(env, namespace);
        const loaded = await store.load(id);
        expect(
          loaded.messages.map((message) => message.content),
          namespace,
        ).toEqual([`kept in ${id}`]);
        expect(
          (await store.list()).sessions.map((entry) => entry.id),
          namespace,
        ).toEqual([id]);
      }
    },
  );

  suite.test(
    GAP_ID,
    'no adapter reads, lists or removes what an adapter of a nested namespace holds, nor the other way round: deletes of sessions it never had and of one it had, index rebuilds, run and quarantine listings, foreign quarantine locations',
    async (env) => {
      const victim = env.id('v');
      const keep = env.id('k');
      const nestedNamespaces = [
        ...LAYOUT_WORDS.map((word) => `${env.namespace}/${word}`),
        ...SESSION_PATHS.map((path) => `${env.namespace}/${path}/${victim}`),
      ];
      const nested: Filled[] = [];
      for (const namespace of nestedNamespaces) nested.push(await fill(env, namespace, [victim]));
      const outer = await fill(env, env.namespace, [victim, keep]);
      const everyone = [outer, ...nested];
      await expectUnchanged(env, nested, 'after the outer namespace was filled');

      // The outer namespace deletes what it never had, rebuilds its index, reads foreign
      // locations, then deletes a session it had: every nested namespace is untouched.
      await intrude(outer, LAYOUT_WORDS, everyone);
      expect(await outer.opened.store.delete(victim)).toBe(true);
      const after = await hold(env, outer.namespace);
      expect(after.documents.filter((entry) => entry.startsWith(`sessions/${victim}@`))).toEqual(
        [],
      );
      expect(after.journals.filter((entry) => entry.startsWith(`${victim}/`))).toEqual([]);
      outer.holding = after;
      await expectUnchanged(env, nested, 'after the outer namespace deleted and rebuilt');

      // And the other way round.
      for (const filled of nested) await intrude(filled, LAYOUT_WORDS, everyone);
      await expectUnchanged(env, everyone, 'after the nested namespaces deleted and rebuilt');
    },
    { timeoutMs },
  );

  const chosen = process.env.KEEPSAKE_MODEL_SEED;
  const seed = Number(chosen ?? Math.floor(Math.random() * 2 ** 31));
  suite.test(
    GAP_ID,
    `randomized: namespaces nested in each other at random depths (seed ${seed}, KEEPSAKE_MODEL_SEED replays it): each deletes what it never had, rebuilds and lists, then one deletes a session all hold; the others keep all they hold`,
    async (env) => {
      const next = seededRandom(seed);
      const pick = <T>(values: readonly T[]): T => values[Math.floor(next() * values.length)]!;
      const victim = env.id('v');
      const segments = [...LAYOUT_WORDS, victim, 'x'];
      const namespaces = new Set([env.namespace]);
      while (namespaces.size < RANDOM_NAMESPACES + 1) {
        // Below the test's namespace or below one already chosen, 1 to 3 segments deeper.
        let namespace = pick([...namespaces]);
        const depth = 1 + Math.floor(next() * 3);
        for (let level = 0; level < depth; level++) namespace = `${namespace}/${pick(segments)}`;
        namespaces.add(namespace);
      }
      const filled: Filled[] = [];
      for (const namespace of namespaces) filled.push(await fill(env, namespace, [victim]));
      const context = `seed ${seed}, namespaces ${[...namespaces].join(', ')}`;
      await expectUnchanged(env, filled, `${context}: after every namespace was filled`);
      // Each in a random order deletes sessions it never had, rebuilds and lists.
      const order = [...filled];
      for (let index = order.length - 1; index > 0; index--) {
        const other = Math.floor(next() * (index + 1));
        [order[index], order[other]] = [order[other]!, order[index]!];
      }
      const ids = segments.filter((segment) => segment !== victim);
      for (const intruder of order) await intrude(intruder, ids, filled);
      await expectUnchanged(env, filled, `${context}: after each deleted, rebuilt and listed`);
      // Then one deletes a session every namespace holds.
      const deleter = pick(filled);
      expect(await deleter.opened.store.delete(victim), context).toBe(true);
      await expectUnchanged(
        env,
        filled.filter((candidate) => candidate !== deleter),
        `${context}: after ${deleter.namespace} deleted ${victim}`,
      );
    },
    { timeoutMs },
  );
}

/** A store on `namespace`; an initializer that refuses nested namespaces is told of the gap. */
async function openOn(env: TestEnvironment, namespace: string): Promise<OpenedStore> {
  try {
    return await env.openStore({}, namespace);
  } catch (error) {
    throw refused(namespace, error);
  }
}

function refused(namespace: string, error: unknown): unknown {
  if (!InvalidConfigError.isInstance(error)) return error;
  return new Error(
    `the initializer could not make the nested namespace "${namespace}" (${error.message}); an adapter whose namespaces cannot nest declares the gap ${GAP_ID} with its reason`,
    { cause: error },
  );
}

/**
 * Fills `namespace` through a store and its adapter: each session with a message and a
 * completed run, a checkpoint and its writes, and a quarantined document; then records it.
 */
async function fill(
  env: TestEnvironment,
  namespace: string,
  sessionIds: readonly string[],
): Promise<Filled> {
  const opened = await openOn(env, namespace);
  const { store, adapter } = opened;
  const durable = { expectedRevision: null, durable: true } as const;
  try {
    for (const id of sessionIds) {
      const session = await store.create({ id, title: `${id} in ${namespace}` }, { fsync: true });
      session.messages.push(textMessage(env, 'user', `kept in ${namespace}`));
      await store.save(session, { fsync: true });
      const run = await store.beginRun(id, { userMessage: userInput('question') });
      await run.append({ type: 'token', data: { text: `answer in ${namespace}` } });
      await run.complete();
      const checkpoint = `${id}.ns.cp-1`;
      await adapter.putDocument('checkpoints', checkpoint, full(`{"cp":"${namespace}"}`), durable);
      await adapter.putDocument('checkpoint-writes', `${checkpoint}.w`, full('{"w":1}'), durable);
    }
    await adapter.putDocument('sessions', 'broken', full(`{"broken":"${namespace}"`), durable);
  } catch (error) {
    throw refused(namespace, error);
  }
  const location = await adapter.quarantineDocument('sessions', 'broken', 'H1 test');
  return { namespace, opened, location, holding: await hold(env, namespace) };
}

function full(text: string) {
  return { kind: 'full' as const, revision: 1, text };
}

/**
 * The namespace deletes sessions it never had (`ids`, each with journals of `RUN_WORDS`),
 * rebuilds its index from its own sessions, lists runs, and reads every other namespace's
 * quarantine location, which must read as nothing.
 */
async function intrude(
  filled: Filled,
  ids: readonly string[],
  everyone: readonly Filled[],
): Promise<void> {
  const { store, adapter } = filled.opened;
  const held = new Set(
    filled.holding.documents.flatMap((entry) =>
      entry.startsWith('sessions/') ? [entry.slice('sessions/'.length, entry.indexOf('@'))] : [],
    ),
  );
  for (const id of ids) {
    if (held.has(id)) continue;
    expect(await store.delete(id), `${filled.namespace} never had ${id}`).toBe(false);
    for (const runId of RUN_WORDS) await adapter.deleteLog(id, runId, { durable: true });
    expect(await store.listRuns(id), `${filled.namespace}: runs of ${id}`).toEqual([]);
  }
  const { sessions } = await store.list({ limit: 1000 });
  await adapter.replaceIndex(sessions, { durable: true });
  if (adapter.readQuarantined === undefined) return;
  // A location names a place in its own namespace: one equal to a location of this
  // namespace (the memory adapter numbers them per namespace) is this namespace's to read.
  const own = new Set((await adapter.listQuarantined()).map((entry) => entry.location));
  for (const other of everyone) {
    if (other === filled || own.has(other.location)) continue;
    expect(
      await adapter.readQuarantined(other.location),
      `${filled.namespace} reads ${other.namespace}'s quarantine location`,
    ).toBeNull();
  }
}

async function expectUnchanged(
  env: TestEnvironment,
  filled: readonly Filled[],
  when: string,
): Promise<void> {
  for (const { namespace, holding } of filled) {
    expect(await hold(env, namespace), `${namespace}, ${when}`).toEqual(holding);
  }
}

/** What `namespace` holds, read by a new adapter (nothing from a cache). */
async function hold(env: TestEnvironment, namespace: string): Promise<Holding> {
  const adapter = await env.rawAdapter(namespace);
  try {
    const documents: string[] = [];
    const sessionIds = new Set<string>([...LAYOUT_WORDS]);
    for (const collection of COLLECTIONS) {
      for (const id of await listIds(adapter, collection)) {
        if (collection === 'sessions') sessionIds.add(id);
        const stored = await adapter.getDocument(collection, id);
        const text = stored === null ? 'gone' : [stored.base, ...stored.deltas].join('|');
        documents.push(`${collection}/${id}@${stored?.revision ?? '-'}:${text}`);
      }
    }
    const journals: string[] = [];
    for (const sessionId of [...sessionIds].sort()) {
      for (const runId of (await adapter.listLogs(sessionId)).sort()) {
        const read = await adapter.readLog(sessionId, runId, { afterSequence: 0, limit: 1000 });
        const records = read.records.map((record) => `${record.sequence}:${record.text}`);
        journals.push(`${sessionId}/${runId}: ${records.join(' ')}`);
      }
    }
    const quarantined: string[] = [];
    for (const entry of await adapter.listQuarantined()) {
      const bytes = (await adapter.readQuarantined?.(entry.location)) ?? '(not read)';
      quarantined.push(`${entry.collection}/${entry.id} at ${entry.location}: ${bytes}`);
    }
    return {
      documents: documents.sort(),
      journals,
      index: await indexOf(adapter),
      quarantined: quarantined.sort(),
    };
  } finally {
    await adapter.close();
  }
}

async function listIds(
  adapter: StorageAdapter,
  collection: (typeof COLLECTIONS)[number],
): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | null = null;
  do {
    const page = await adapter.listDocuments(collection, { cursor, limit: 100 });
    ids.push(...page.ids);
    cursor = page.nextCursor;
  } while (cursor !== null);
  return ids.sort();
}

async function indexOf(adapter: StorageAdapter): Promise<string[]> {
  const entries: string[] = [];
  let cursor: string | null = null;
  do {
    const page = await adapter.listIndex({ cursor, limit: 100 });
    if (page.status !== 'ok') return [`(${page.status})`];
    for (const entry of page.entries) {
      const { id, title } = entry as { id?: unknown; title?: unknown };
      entries.push(`${String(id)}: ${String(title)}`);
    }
    cursor = page.nextCursor;
  } while (cursor !== null);
  return entries.sort();
}
