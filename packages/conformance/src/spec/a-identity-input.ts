/**
 * A1–A5: ids validated before any storage call, everything read validated (corrupt
 * documents quarantined, backend errors typed), explicit limits, unknown fields kept and
 * `_keepsake` fields reserved, invalid non-essential fields reset and reported.
 *
 * One file per contract area, so docs/contract.md links each clause to its tests; that
 * is why these files are longer than the house's usual ~300 lines.
 */
import {
  BackendError,
  CorruptDocumentError,
  InvalidConfigError,
  InvalidIdError,
  KeepsakeError,
  LimitExceededError,
  NotFoundError,
  ReservedFieldError,
  RunNotActiveError,
  type Session,
  type SessionStore,
  type StoreEvent,
} from '@keepsake/core';
import { expect } from 'vitest';
import {
  CORRUPT_VARIANTS,
  healthySessionWithSample,
  plantDocument,
} from '../harness/corrupt-documents.js';
import type { TestEnvironment } from '../harness/environment.js';
import {
  captureError,
  contentsOf,
  expectTypedError,
  textMessage,
  userInput,
} from '../harness/fixtures.js';
import { rewritePersistedSession, type TamperableDocument } from '../harness/persisted-document.js';
import type { SpecRegistrar } from '../harness/suite.js';
import { defineLargeValueTests } from './a-large-values.js';
import { definePrivateStateTests } from './a-private-state.js';
import { defineQuarantinedBytesTests } from './a-quarantined-bytes.js';

/** A1: values no id may take — path escapes, key patterns, NUL, empty, too long, not a string. */
export const INVALID_IDS: ReadonlyArray<readonly [string, unknown]> = [
  ['".."', '..'],
  ['"/"', '/'],
  ['"a/b"', 'a/b'],
  ['"\\\\"', '\\'],
  ['NUL', '\u0000'],
  ['"a" + NUL', 'a\u0000'],
  ['"*"', '*'],
  ['"?"', '?'],
  ['"["', '['],
  ['"{a}"', '{a}'],
  ['"a:b"', 'a:b'],
  ['"a.b"', 'a.b'],
  ['" "', ' '],
  ['"é"', 'é'],
  ['empty', ''],
  ['129 characters', 'a'.repeat(129)],
  ['a number', 42],
  ['null', null],
  ['an object', { id: 'a' }],
];

/** Every store operation that takes a session or run id, with the invalid id put in one slot. */
function idOperations(
  store: SessionStore,
  validId: string,
  template: Session,
): Array<[string, (bad: unknown) => unknown]> {
  const any = (value: unknown) => value as string;
  return [
    ['create({ id })', (bad) => store.create({ id: any(bad) })],
    ['load', (bad) => store.load(any(bad))],
    ['exists', (bad) => store.exists(any(bad))],
    ['delete', (bad) => store.delete(any(bad))],
    ['save(session with that id)', (bad) => store.save({ ...template, id: any(bad) })],
    ['rename(bad, valid)', (bad) => store.rename(any(bad), validId)],
    ['rename(valid, bad)', (bad) => store.rename(validId, any(bad))],
    ['withLock', (bad) => store.withLock(any(bad), async () => undefined)],
    ['retainedRevisions', (bad) => store.retainedRevisions(any(bad))],
    ['loadRetainedRevision', (bad) => store.loadRetainedRevision(any(bad), 1)],
    ['beginRun(bad session)', (bad) => store.beginRun(any(bad), { userMessage: userInput('x') })],
    [
      'beginRun(runId bad)',
      (bad) => store.beginRun(validId, { userMessage: userInput('x'), runId: any(bad) }),
    ],
    ['cancelRun(bad session)', (bad) => store.cancelRun(any(bad))],
    ['cancelRun(runId bad)', (bad) => store.cancelRun(validId, any(bad))],
    ['readJournal(bad session)', (bad) => store.readJournal(any(bad), 'run-1')],
    ['readJournal(runId bad)', (bad) => store.readJournal(validId, any(bad))],
    ['runSummary(bad session)', (bad) => store.runSummary(any(bad), 'run-1')],
    ['runSummary(runId bad)', (bad) => store.runSummary(validId, any(bad))],
    ['listRuns', (bad) => store.listRuns(any(bad))],
  ];
}

/** Lifecycle calls: empty and missing ids are no-ops (G8); any other invalid id is rejected. */
function lifecycleOperations(store: SessionStore): Array<[string, (bad: unknown) => unknown]> {
  const any = (value: unknown) => value as string;
  const agent = { commitMemory: async () => undefined };
  return [
    ['lifecycle.markTurnCompleted', (bad) => store.lifecycle.markTurnCompleted(any(bad))],
    ['lifecycle.hasUncommittedWork', (bad) => store.lifecycle.hasUncommittedWork(any(bad))],
    ['lifecycle.commit', (bad) => store.lifecycle.commit(any(bad), { agent })],
    ['lifecycle.registerAgent', (bad) => store.lifecycle.registerAgent(any(bad), agent)],
    ['lifecycle.evict', (bad) => store.lifecycle.evict(any(bad))],
  ];
}

export function defineIdentityAndInput(suite: SpecRegistrar): void {
  suite.test(
    'A1',
    'invalid session and run ids are rejected with InvalidIdError before any adapter call',
    async (env) => {
      const { store, adapter } = await env.openStore();
      const validId = env.id();
      const template = await store.create({ id: env.id(), title: 'template' });
      const problems: string[] = [];
      for (const [operation, call] of idOperations(store, validId, template)) {
        for (const [label, bad] of INVALID_IDS) {
          adapter.clearCalls();
          const error = await captureError(() => call(bad));
          const methods = adapter.calls.map((entry) => entry.method);
          if (!InvalidIdError.isInstance(error)) {
            problems.push(`${operation} with ${label}: ${describeOutcome(error)}`);
          } else if (methods.length > 0) {
            problems.push(`${operation} with ${label}: adapter called (${methods.join(', ')})`);
          }
        }
      }
      expect(problems, 'operations that did not reject the id up front').toEqual([]);
    },
  );

  suite.test(
    'A1',
    'lifecycle calls reject invalid non-empty ids before any adapter call',
    async (env) => {
      const { store, adapter } = await env.openStore();
      const problems: string[] = [];
      for (const [operation, call] of lifecycleOperations(store)) {
        for (const [label, bad] of INVALID_IDS) {
          if (bad === '' || bad === null) continue; // G8: safe no-ops, tested there.
          adapter.clearCalls();
          const error = await captureError(() => call(bad));
          if (!InvalidIdError.isInstance(error)) {
            problems.push(`${operation} with ${label}: ${describeOutcome(error)}`);
          } else if (adapter.calls.length > 0) {
            problems.push(`${operation} with ${label}: adapter called`);
          }
        }
      }
      expect(problems).toEqual([]);
    },
  );

  suite.test(
    'A1',
    'an invalid id reaching a store that has not touched storage yet causes no adapter call at all',
    async (env) => {
      const problems: string[] = [];
      const first: Array<[string, (store: SessionStore) => Promise<unknown>]> = [
        ['load', (store) => store.load('../etc')],
        ['create', (store) => store.create({ id: 'a/b' })],
        ['beginRun', (store) => store.beginRun('*', { userMessage: userInput('x') })],
        ['withLock', (store) => store.withLock('', async () => undefined)],
      ];
      for (const [operation, call] of first) {
        const { store, adapter } = await env.openStore();
        const error = await captureError(() => call(store));
        if (!InvalidIdError.isInstance(error))
          problems.push(`${operation}: ${describeOutcome(error)}`);
        const methods = adapter.calls.map((entry) => entry.method);
        if (methods.length > 0)
          problems.push(`${operation}: adapter called (${methods.join(', ')})`);
      }
      expect(problems).toEqual([]);
    },
  );

  suite.test('A1', 'every id of the allowed alphabet up to 128 characters works', async (env) => {
    const opened = await env.openStore();
    const { store } = opened;
    const unique = env.id('x').replaceAll('-', '_');
    const longest = `${unique}-AZaz09_`.padEnd(128, 'Z');
    const ids = [longest, `_${unique}`, `-${unique}`, `A${unique}`];
    for (const id of ids) await store.create({ id, title: id.slice(0, 10) });
    const random = await store.create({ title: 'random id' });
    expect(random.id).toMatch(/^[A-Za-z0-9_-]{1,128}$/);
    const run = await store.beginRun(longest, { userMessage: userInput('hi'), runId: longest });
    expect(run.runId).toBe(longest);
    await run.complete({ assistantMessages: [{ role: 'assistant', content: 'hello' }] });
    const reopened = await env.restartGracefully(opened);
    for (const id of [...ids, random.id]) {
      expect((await reopened.store.load(id)).id).toBe(id);
    }
    expect((await reopened.store.readJournal(longest, longest)).records.length).toBeGreaterThan(0);
  });

  suite.test('A1:case', 'ids that differ only in case are distinct sessions', async (env) => {
    const opened = await env.openStore();
    const base = env.id('case');
    const upper = `Chat-A-${base}`;
    const lower = `chat-a-${base}`;
    await opened.store.create({
      id: upper,
      title: 'upper',
      messages: [textMessage(env, 'user', 'U')],
    });
    await opened.store.create({
      id: lower,
      title: 'lower',
      messages: [textMessage(env, 'user', 'l')],
    });
    const reopened = await env.restartGracefully(opened);
    const upperLoaded = await reopened.store.load(upper);
    const lowerLoaded = await reopened.store.load(lower);
    expect([upperLoaded.title, contentsOf(upperLoaded)]).toEqual(['upper', ['U']]);
    expect([lowerLoaded.title, contentsOf(lowerLoaded)]).toEqual(['lower', ['l']]);
    await reopened.store.delete(lower);
    expect(await reopened.store.exists(upper)).toBe(true);
    const listed = (await reopened.store.list({ limit: 1000 })).sessions.map((entry) => entry.id);
    expect(listed).toContain(upper);
    expect(listed).not.toContain(lower);
  });

  defineCorruptionTests(suite);
  defineQuarantinedBytesTests(suite);
  defineLimitTests(suite);
  defineLargeValueTests(suite);
  defineFieldTests(suite);
  definePrivateStateTests(suite);
}

function describeOutcome(error: unknown): string {
  if (error === undefined) return 'accepted';
  if (KeepsakeError.isInstance(error)) return `${error.name} (${error.code})`;
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

/** Rewrites the stored document of a session through a raw adapter (A5). */
async function tamperDocument(
  env: TestEnvironment,
  id: string,
  edit: (document: TamperableDocument) => void,
): Promise<void> {
  await rewritePersistedSession(await env.rawAdapter(), id, edit);
}

function defineCorruptionTests(suite: SpecRegistrar): void {
  for (const [variant, makeText] of CORRUPT_VARIANTS) {
    suite.test(
      'A2',
      `a stored document holding ${variant} is quarantined and reported; the store keeps working`,
      async (env) => {
        const { store } = await env.openStore();
        const { healthy, sample } = await healthySessionWithSample(env, store);
        const id = env.id('corrupt');
        await plantDocument(env, id, makeText(id, sample));

        const error = await expectTypedError(store.load(id), CorruptDocumentError);
        expect(error.sessionId).toBe(id);
        expect(error.adapter).toBe(suite.context.adapterName);
        expect(error.message).toContain(id);
        const quarantined = (await store.quarantined()).filter((entry) => entry.id === id);
        expect(quarantined).toHaveLength(1);
        expect(quarantined[0]!.collection).toBe('sessions');
        expect(quarantined[0]!.location).not.toBe('');
        // Moved aside, never replaced by an empty session. (That the quarantined bytes are
        // intact: a-quarantined-bytes.ts, through the adapter's optional readQuarantined.)
        const raw = await env.rawAdapter();
        expect(await raw.getDocument('sessions', id)).toBeNull();
        await expectTypedError(store.load(id), NotFoundError);

        expect(contentsOf(await store.load(healthy.id))).toEqual(['keep me']);
        const fresh = await store.create({ id, title: 'fresh' });
        expect(fresh.messages).toEqual([]);
        const listed = (await store.list({ limit: 1000 })).sessions.map((entry) => entry.id);
        expect(listed).toEqual(expect.arrayContaining([healthy.id, id]));
      },
    );
  }

  suite.test(
    'A2',
    'a read that fails for another reason is a typed backend error, never corruption, "not found" or an empty session',
    async (env) => {
      const opened = await env.openStore();
      const id = env.id();
      await opened.store.create(
        { id, title: 'on disk', messages: [textMessage(env, 'user', 'precious')] },
        { fsync: true },
      );
      const { store, adapter } = await env.restartGracefully(opened);
      const failures: Array<[string, () => unknown]> = [
        ['a typed BackendError', () => new BackendError(adapter.name, 'read a document')],
        ['an untyped EACCES error', () => Object.assign(new Error('EACCES'), { code: 'EACCES' })],
      ];
      for (const [label, makeError] of failures) {
        const removeFault = adapter.inject({
          method: 'getDocument',
          match: ([collection, documentId]) => collection === 'sessions' && documentId === id,
          error: makeError,
        });
        const error = await captureError(() => store.load(id));
        removeFault();
        expect(KeepsakeError.isInstance(error), `${label}: typed error`).toBe(true);
        const code = (error as KeepsakeError).code;
        expect(['backend_error', 'backend_unavailable'], `${label}: code ${code}`).toContain(code);
      }
      expect((await store.quarantined()).filter((entry) => entry.id === id)).toEqual([]);
      expect(contentsOf(await store.load(id))).toEqual(['precious']);
    },
  );

  suite.test(
    'A2',
    'a run whose session another instance moved to quarantine is refused and keeps its journal',
    async (env) => {
      const worker = await env.openStore();
      const session = await worker.store.create({ title: 'will not parse' });
      const run = await worker.store.beginRun(session.id, { userMessage: userInput('q') });
      const stored = await (await env.rawAdapter()).getDocument('sessions', session.id);
      await plantDocument(env, session.id, 'this is not json {', stored?.revision ?? null);
      const reader = await env.openStore();
      await expectTypedError(reader.store.load(session.id), CorruptDocumentError);
      // The worker's first append finds no session document: not deleted, quarantined.
      await expectTypedError(
        run.append({ type: 'token', data: { text: 'after the quarantine' } }),
        RunNotActiveError,
      );
      const raw = await env.rawAdapter();
      expect(await raw.listLogs(session.id), 'the journal stays beside the quarantine').toEqual([
        run.runId,
      ]);
      const journal = await raw.readLog(session.id, run.runId, { afterSequence: 0, limit: 10 });
      expect(journal.records.map((record) => record.sequence)).toEqual([1]);
    },
  );

  suite.test(
    'A2',
    'a journal record that does not parse or names another journal is reported, never used',
    async (env) => {
      const { store } = await env.openStore();
      const id = env.id();
      const other = env.id();
      await store.create({ id });
      const raw = await env.rawAdapter();
      const foreign = JSON.stringify({
        sessionId: other,
        runId: 'run-a',
        sequence: 1,
        eventId: 'e1',
        type: 'token',
        data: { text: 'not mine' },
        at: env.clock.now(),
      });
      expect(
        (await raw.appendLog(id, 'run-a', [{ sequence: 1, text: foreign }], { durability: 'each' }))
          .ok,
      ).toBe(true);
      expect(
        (
          await raw.appendLog(id, 'run-b', [{ sequence: 1, text: '{"torn' }], {
            durability: 'each',
          })
        ).ok,
      ).toBe(true);
      for (const runId of ['run-a', 'run-b']) {
        const outcome = await captureError(async () => {
          const result = await store.readJournal(id, runId);
          expect(result.records, `${runId}: no record is used`).toEqual([]);
          expect(result.invalidRecord, `${runId}: the bad record is reported`).toEqual({
            sequence: 1,
          });
        });
        if (outcome !== undefined && !KeepsakeError.isInstance(outcome)) throw outcome;
      }
    },
  );

  suite.test(
    'A2',
    'a lifecycle document that does not parse is reported, never silently reset',
    async (env) => {
      const { store } = await env.openStore();
      const id = env.id();
      await store.create({ id });
      const raw = await env.rawAdapter();
      const planted = await raw.putDocument(
        'lifecycle',
        id,
        { kind: 'full', revision: 1, text: '{"generation": 7, "committedGen' },
        { expectedRevision: null, durable: true },
      );
      expect(planted.ok).toBe(true);
      const error = await captureError(() => store.lifecycle.hasUncommittedWork(id));
      const quarantined = (await store.quarantined()).some(
        (entry) => entry.collection === 'lifecycle' && entry.id === id,
      );
      expect(
        KeepsakeError.isInstance(error) || quarantined,
        'the unreadable lifecycle state must be reported (typed error) or quarantined, not read as zero',
      ).toBe(true);
    },
  );
}

function defineLimitTests(suite: SpecRegistrar): void {
  suite.test('A3', 'limits are validated at construction with InvalidConfigError', async (env) => {
    const bad: Array<Record<string, number>> = [
      { maxMessages: 0 },
      { maxDocumentBytes: -1 },
      { maxJournalEventBytes: Number.NaN },
    ];
    for (const limits of bad) {
      await expectTypedError(() => env.openStore({ limits }), InvalidConfigError);
    }
  });

  suite.test(
    'A3',
    'too many messages is a LimitExceededError and nothing is written',
    async (env) => {
      const opened = await env.openStore({ limits: { maxMessages: 3 } });
      const { store, adapter } = opened;
      const tooMany = [1, 2, 3, 4].map((n) => textMessage(env, 'user', `m${n}`));
      const newId = env.id();
      const refused = await expectTypedError(
        store.create({ id: newId, messages: tooMany }),
        LimitExceededError,
      );
      expect(refused.limit).toBe('maxMessages');
      expect(await store.exists(newId)).toBe(false);

      const session = await store.create(
        { id: env.id(), messages: tooMany.slice(0, 3) },
        { fsync: true },
      );
      session.messages.push(textMessage(env, 'assistant', 'one too many'));
      adapter.clearCalls();
      await expectTypedError(store.save(session, { fsync: true }), LimitExceededError);
      expect(adapter.callsTo('putDocument')).toEqual([]);
      await env.crash(opened);
      const reopened = await env.openStore({ limits: { maxMessages: 3 } });
      expect(contentsOf(await reopened.store.load(session.id))).toEqual(['m1', 'm2', 'm3']);
    },
  );

  suite.test(
    'A3',
    'a document over maxDocumentBytes is refused whole, also when only a message is appended',
    async (env) => {
      const opened = await env.openStore({ limits: { maxDocumentBytes: 4096 } });
      const { store, adapter } = opened;
      const huge = textMessage(env, 'user', 'x'.repeat(6000));
      const newId = env.id();
      const refused = await expectTypedError(
        store.create({ id: newId, messages: [huge] }),
        LimitExceededError,
      );
      expect(refused.limit).toBe('maxDocumentBytes');
      expect(await store.exists(newId)).toBe(false);

      const session = await store.create(
        { id: env.id(), messages: [textMessage(env, 'user', 'y'.repeat(2500))] },
        { fsync: true },
      );
      // Append-only: an adapter with appendDeltas would get a small delta, yet the whole
      // document would be over the limit.
      session.messages.push(textMessage(env, 'assistant', 'z'.repeat(2500)));
      adapter.clearCalls();
      await expectTypedError(store.save(session, { fsync: true }), LimitExceededError);
      expect(adapter.callsTo('putDocument')).toEqual([]);
      await env.crash(opened);
      const reopened = await env.openStore({ limits: { maxDocumentBytes: 4096 } });
      const stored = await reopened.store.load(session.id);
      expect(stored.messages).toHaveLength(1);
    },
  );

  suite.test(
    'A3',
    'a journal event over maxJournalEventBytes is refused and leaves no gap',
    async (env) => {
      const { store } = await env.openStore({ limits: { maxJournalEventBytes: 512 } });
      const session = await store.create({ id: env.id() });
      const run = await store.beginRun(session.id, { userMessage: userInput('go') });
      await run.append({ type: 'token', data: { text: 'small' } });
      const refused = await expectTypedError(
        () => run.append({ type: 'token', data: { text: 'x'.repeat(2000) } }),
        LimitExceededError,
      );
      expect(refused.limit).toBe('maxJournalEventBytes');
      const next = await run.append({ type: 'token', data: { text: 'after' } });
      expect(next.sequence).toBe(2);
      const journal = await store.readJournal(session.id, run.runId);
      expect(journal.records.map((record) => record.data.text)).toEqual(['small', 'after']);
      expect(journal.gap).toBeNull();
    },
  );

  suite.test(
    'A3',
    'a user message too large for the document starts no run and writes no pending turn',
    async (env) => {
      const opened = await env.openStore({ limits: { maxDocumentBytes: 4096 } });
      const { store } = opened;
      const session = await store.create({ id: env.id() }, { fsync: true });
      await expectTypedError(
        store.beginRun(session.id, { userMessage: userInput('q'.repeat(8000)) }),
        LimitExceededError,
      );
      expect(store.activeRun(session.id)).toBeNull();
      const reopened = await env.restartAfterCrash(opened, { limits: { maxDocumentBytes: 4096 } });
      expect((await reopened.store.load(session.id)).pending).toBeNull();
    },
  );
}

function defineFieldTests(suite: SpecRegistrar): void {
  suite.test(
    'A4',
    'unknown fields on sessions, messages and content parts survive saves and a restart',
    async (env) => {
      const opened = await env.openStore();
      const id = env.id();
      const session = await opened.store.create({
        id,
        title: 'forward compatible',
        futureField: { nested: [1, 'two', { three: 3 }] },
        metadata: { provider: { state: 'kept' } },
        messages: [
          textMessage(env, 'user', 'hi', { providerData: { tokens: 3 } }),
          {
            ...textMessage(env, 'assistant', ''),
            content: [{ type: 'text', text: 'hello', cacheControl: { kind: 'ephemeral' } }],
          },
        ],
      });
      session.messages.push(textMessage(env, 'user', 'appended', { clientTag: 'abc' }));
      (session as Record<string, unknown>).laterField = 42;
      await opened.store.save(session, { fsync: true });
      const reopened = await env.restartAfterCrash(opened);
      const loaded = (await reopened.store.load(id)) as Record<string, unknown> & Session;
      expect(loaded.futureField).toEqual({ nested: [1, 'two', { three: 3 }] });
      expect(loaded.laterField).toBe(42);
      expect(loaded.metadata).toEqual({ provider: { state: 'kept' } });
      expect(loaded.messages[0]).toMatchObject({ providerData: { tokens: 3 } });
      expect(loaded.messages[1]!.content).toEqual([
        { type: 'text', text: 'hello', cacheControl: { kind: 'ephemeral' } },
      ]);
      expect(loaded.messages[2]).toMatchObject({ content: 'appended', clientTag: 'abc' });
    },
  );

  suite.test(
    'A4',
    'fields beginning with _keepsake are rejected with ReservedFieldError and nothing is written',
    async (env) => {
      const opened = await env.openStore();
      const { store, adapter } = opened;
      const newId = env.id();
      await expectTypedError(store.create({ id: newId, _keepsakeFormat: 2 }), ReservedFieldError);
      await expectTypedError(
        store.create({ id: newId, messages: [textMessage(env, 'user', 'x', { _keepsakeX: 1 })] }),
        ReservedFieldError,
      );
      expect(await store.exists(newId)).toBe(false);

      const session = await store.create(
        { id: env.id(), messages: [textMessage(env, 'user', 'original')] },
        { fsync: true },
      );
      adapter.clearCalls();
      (session as Record<string, unknown>)._keepsakeRevision = 99;
      const onSession = await expectTypedError(store.save(session), ReservedFieldError);
      expect(onSession.field).toBe('_keepsakeRevision');
      delete (session as Record<string, unknown>)._keepsakeRevision;
      session.messages.push(textMessage(env, 'assistant', 'bad', { _keepsakeDelta: true }));
      await expectTypedError(store.save(session), ReservedFieldError);
      await expectTypedError(
        store.beginRun(session.id, { userMessage: userInput('x', { _keepsakeOwner: 'me' }) }),
        ReservedFieldError,
      );
      expect(adapter.callsTo('putDocument')).toEqual([]);
      const reopened = await env.restartAfterCrash(opened);
      expect(contentsOf(await reopened.store.load(session.id))).toEqual(['original']);
    },
  );

  suite.test(
    'A5',
    'an invalid timestamp is reset and reported with a warning; the transcript loads',
    async (env) => {
      const opened = await env.openStore();
      const id = env.id();
      await opened.store.create(
        { id, messages: [textMessage(env, 'user', 'one'), textMessage(env, 'assistant', 'two')] },
        { fsync: true },
      );
      await env.closeStore(opened);
      await tamperDocument(env, id, (document) => {
        document.updatedAt = 'yesterday';
        document.messages[1]!.createdAt = -5;
      });
      const { store } = await env.openStore();
      const warnings = collectWarnings(store);
      const loaded = await store.load(id);
      expect(contentsOf(loaded)).toEqual(['one', 'two']);
      expect(typeof loaded.updatedAt).toBe('number');
      expect(loaded.messages[1]!.createdAt).toBeGreaterThanOrEqual(0);
      const fields = warnings.filter((event) => event.sessionId === id).map((event) => event.field);
      expect(fields).toContain('updatedAt');
      expect(fields.some((field) => field.includes('createdAt'))).toBe(true);
    },
  );

  suite.test(
    'A5',
    'a malformed pending turn is reset and reported; the user message is not lost',
    async (env) => {
      const opened = await env.openStore();
      const id = env.id();
      await opened.store.create({ id }, { fsync: true });
      const run = await opened.store.beginRun(id, { userMessage: userInput('do not lose me') });
      await env.crash(opened);
      await tamperDocument(env, id, (document) => {
        const pending = document.pending as Record<string, unknown>;
        pending.attachments = 'not a list';
        pending.startedAt = 'soon';
      });
      const { store } = await env.openStore();
      const warnings = collectWarnings(store);
      const loaded = await store.load(id);
      expect(
        warnings.some((event) => event.sessionId === id && event.field.startsWith('pending')),
      ).toBe(true);
      const kept =
        loaded.pending?.userMessage.content === 'do not lose me' ||
        contentsOf(loaded).includes('do not lose me');
      expect(kept, 'the user message of the pending turn').toBe(true);
      expect(loaded.pending === null || loaded.pending.streamId === run.runId).toBe(true);
    },
  );

  suite.test(
    'F1',
    'a pending turn stored without a valid start time counts as past grace: its question reaches the transcript and the session takes the next run (A5)',
    async (env) => {
      for (const startedAt of [undefined, 'soon', -5]) {
        const opened = await env.openStore();
        const id = env.id();
        await opened.store.create({ id }, { fsync: true });
        await opened.store.beginRun(id, { userMessage: userInput('do not lose me') });
        await env.crash(opened);
        await tamperDocument(env, id, (document) => {
          const pending = document.pending as Record<string, unknown>;
          if (startedAt === undefined) delete pending.startedAt;
          else pending.startedAt = startedAt;
          delete pending.heartbeatAt;
        });
        const { store } = await env.openStore();
        // Loads at any time later, even long past the grace period, must not find it alive.
        await store.load(id);
        await env.clock.advance(3_000_000);
        const loaded = await store.load(id);
        const label = JSON.stringify(startedAt ?? 'missing');
        expect(loaded.pending, `${label}: the turn was repaired`).toBeNull();
        expect(contentsOf(loaded), label).toContain('do not lose me');
        const run = await store.beginRun(id, { userMessage: userInput('next question') });
        await run.complete({ assistantMessages: [{ role: 'assistant', content: 'answer' }] });
      }
    },
  );

  suite.test(
    'A5',
    'only a document whose transcript cannot be read is quarantined',
    async (env) => {
      const opened = await env.openStore();
      const readable = env.id();
      const unreadable = env.id();
      for (const id of [readable, unreadable]) {
        await opened.store.create(
          { id, messages: [textMessage(env, 'user', 'hello')] },
          { fsync: true },
        );
      }
      await env.closeStore(opened);
      await tamperDocument(env, readable, (document) => {
        document.title = 12;
        document.metadata = 'not an object';
        document.toolCalls = 'nope';
      });
      await tamperDocument(env, unreadable, (document) => {
        (document as Record<string, unknown>).messages = 'not a list';
      });
      const { store } = await env.openStore();
      const loaded = await store.load(readable);
      expect(contentsOf(loaded)).toEqual(['hello']);
      expect(typeof loaded.title).toBe('string');
      expect(loaded.metadata).toEqual({});
      await expectTypedError(store.load(unreadable), CorruptDocumentError);
      const quarantinedIds = (await store.quarantined()).map((entry) => entry.id);
      expect(quarantinedIds).toContain(unreadable);
      expect(quarantinedIds).not.toContain(readable);
    },
  );
}

type WarningEvent = Extract<StoreEvent, { type: 'warning' }>;

function collectWarnings(store: SessionStore): WarningEvent[] {
  const warnings: WarningEvent[] = [];
  store.on((event) => {
    if (event.type === 'warning') warnings.push(event);
  });
  return warnings;
}
