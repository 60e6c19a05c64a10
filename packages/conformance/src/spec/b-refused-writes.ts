/**
 * B4, B5, B7, C4: a write that was refused leaves the store exactly as it was, and a write
 * that landed is reported as landed. Found outside the suite: a refused save of a copy
 * became the live session (later loads returned it and crash repair stored it), and an
 * index error after the document had landed failed the save, hid the session from list()
 * and made the retried create meet its own document.
 */
import {
  AlreadyExistsError,
  BackendError,
  type PutResult,
  type Session,
  ShrinkRefusedError,
  type StoreEvent,
} from '@keepsake/core';
import { expect } from 'vitest';
import type { OpenedStore, TestEnvironment } from '../harness/environment.js';
import { contentsOf, expectTypedError, textMessage } from '../harness/fixtures.js';
import type { SpecRegistrar } from '../harness/suite.js';

const PAST_GRACE_MS = 10 * 60_000;

async function promptAndAnswer(env: TestEnvironment, opened: OpenedStore): Promise<Session> {
  return opened.store.create(
    {
      id: env.id(),
      messages: [textMessage(env, 'user', 'prompt'), textMessage(env, 'assistant', 'answer')],
    },
    { fsync: true },
  );
}

/**
 * Fault injection: the next index update of a session write fails after the document has
 * landed, as the adapter reports it (inside `putDocument` for adapters that index with the
 * document, as its own `putIndexEntry` call for the others).
 */
function failNextIndexUpdate(opened: OpenedStore): void {
  const failure = () =>
    new BackendError(opened.adapter.name, 'write the index', {
      cause: new Error('EIO (injected)'),
    });
  if (opened.adapter.capabilities.indexWithDocument === true) {
    opened.adapter.inject({
      method: 'putDocument',
      times: 1,
      match: (args) => args[0] === 'sessions',
      replace: async (_args, real) => {
        const result = (await real()) as PutResult;
        return result.ok ? { ok: true, indexFailure: failure() } : result;
      },
    });
  } else {
    opened.adapter.inject({ method: 'putIndexEntry', times: 1, error: failure });
  }
}

export function defineRefusedWriteTests(suite: SpecRegistrar): void {
  suite.test(
    'B4',
    'a refused save of a copy leaves the live session and what is stored as they were',
    async (env) => {
      const opened = await env.openStore();
      const { store } = opened;
      const live = await promptAndAnswer(env, opened);
      const copy = {
        ...live,
        messages: [],
        pending: {
          streamId: env.id('run'),
          userMessage: textMessage(env, 'user', 'stale question'),
          attachments: [],
          startedAt: env.clock.now(),
        },
      } as Session;
      await expectTypedError(store.save(copy), ShrinkRefusedError);
      const loaded = await store.load(live.id);
      expect(loaded, 'load still returns the live instance').toBe(live);
      expect(contentsOf(loaded)).toEqual(['prompt', 'answer']);
      expect(loaded.pending).toBeNull();
      // Past the grace period nothing repairs the refused copy's pending turn into storage.
      await env.clock.advance(PAST_GRACE_MS);
      expect(contentsOf(await store.load(live.id))).toEqual(['prompt', 'answer']);
      const closed = await store.close();
      expect(closed.flush.failed).toEqual([]);
      const reader = await env.openStore();
      const stored = await reader.store.load(live.id);
      expect(contentsOf(stored)).toEqual(['prompt', 'answer']);
      expect(stored.revision).toBe(1);
    },
  );

  suite.test(
    'B5',
    'saving a spread of a summary-only view is refused and changes nothing',
    async (env) => {
      const opened = await env.openStore();
      const { store } = opened;
      const messages = Array.from({ length: 50 }, (_, index) =>
        textMessage(env, index % 2 === 0 ? 'user' : 'assistant', `message ${index}`),
      );
      const live = await store.create({ id: env.id(), messages }, { fsync: true });
      const copy = { ...(await store.load(live.id, { summaryOnly: true })) } as Session;
      copy.pending = null;
      await expectTypedError(store.save(copy), ShrinkRefusedError);
      const loaded = await store.load(live.id);
      expect(loaded).toBe(live);
      expect(loaded.messages).toHaveLength(50);
      const closed = await store.close();
      expect(closed.flush.failed, 'close() flushes the live session, not the copy').toEqual([]);
      const reader = await env.openStore();
      expect((await reader.store.load(live.id)).messages).toHaveLength(50);
    },
  );

  suite.test(
    'B7',
    'an index error after the document landed: the save resolves, warns, and list() still shows it',
    async (env) => {
      const opened = await env.openStore();
      const { store } = opened;
      const events: StoreEvent[] = [];
      store.on((event) => events.push(event));
      const id = env.id();
      failNextIndexUpdate(opened);
      const created = await store.create({ id, title: 'indexed late' }, { fsync: true });
      expect(created.revision).toBe(1);
      expect(
        events.some(
          (event) => event.type === 'warning' && event.sessionId === id && event.field === 'index',
        ),
        'the index failure is reported as a warning',
      ).toBe(true);
      // The session exists: creating it again is refused as for any stored session.
      await expectTypedError(store.create({ id }), AlreadyExistsError);
      const listed = (await store.list()).sessions.map((summary) => summary.id);
      expect(listed).toContain(id);
      const reader = await env.openStore();
      expect((await reader.store.load(id)).title).toBe('indexed late');
      expect((await reader.store.list()).sessions.map((summary) => summary.id)).toContain(id);
    },
  );

  suite.test(
    'B7',
    'a session deleted while its index entry was due is not listed again',
    async (env) => {
      const opened = await env.openStore();
      const { store } = opened;
      const id = env.id();
      failNextIndexUpdate(opened);
      await store.create({ id });
      await store.delete(id);
      expect((await store.list()).sessions.map((summary) => summary.id)).not.toContain(id);
    },
  );
}
