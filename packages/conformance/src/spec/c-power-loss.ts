/**
 * C1, C2: what `flushAll()` and `close()` promise about writes made without fsync — they
 * reach stable storage through `adapter.sync()`. Issue 24: an adapter whose `sync()` did
 * nothing passed every test, because no test saved without fsync and then lost power.
 */
import { BackendError } from '@keepsake/core';
import { expect } from 'vitest';
import type { OpenedStore, TestEnvironment } from '../harness/environment.js';
import { contentsOf, textMessage, userInput } from '../harness/fixtures.js';
import type { SpecRegistrar } from '../harness/suite.js';

async function sessionSavedWithoutFsync(env: TestEnvironment) {
  const opened = await env.openStore();
  const session = await opened.store.create({ id: env.id(), title: 'power loss' }, { fsync: true });
  session.messages.push(textMessage(env, 'user', 'saved without fsync'));
  await opened.store.save(session);
  return { opened, id: session.id };
}

/**
 * The store's own rewrite of `id` at flushAll or close fails (FAULT INJECTION in the proxy,
 * nothing reaches the adapter): no durable write follows the save made without fsync, so only
 * `adapter.sync()` can make it durable. Issue 42 item 6: on a backend with one write-ahead
 * log (SQLite in WAL mode) any later durable write also makes every earlier write durable,
 * and the rewrite of a cached session covered a `sync()` that did nothing.
 */
function failRewritesOf(opened: OpenedStore, id: string): void {
  opened.adapter.inject({
    method: 'putDocument',
    match: ([collection, written]) => collection === 'sessions' && written === id,
    error: () => new BackendError(opened.adapter.name, 'write a session (injected fault)'),
  });
}

export function definePowerLossTests(suite: SpecRegistrar): void {
  suite.test(
    'C1',
    'flushAll makes a save made without fsync survive a power loss even when its own rewrite fails: adapter.sync() does it',
    async (env) => {
      const { opened, id } = await sessionSavedWithoutFsync(env);
      failRewritesOf(opened, id);
      const report = await opened.store.flushAll();
      expect(report.failed.map((failure) => failure.sessionId)).toEqual([id]);
      const reopened = await env.restartAfterCrash(opened);
      expect(contentsOf(await reopened.store.load(id))).toEqual(['saved without fsync']);
    },
  );

  suite.test(
    'C1',
    'flushAll makes journal appends made without a flush survive a power loss even when the session rewrite fails: adapter.sync() does it',
    async (env) => {
      const opened = await env.openStore({ journal: { durability: 'terminal' } });
      const session = await opened.store.create({ id: env.id() }, { fsync: true });
      const run = await opened.store.beginRun(session.id, { userMessage: userInput('question') });
      await run.append({ type: 'token', data: { text: 'kept by sync alone' } });
      failRewritesOf(opened, session.id);
      await opened.store.flushAll();
      const reopened = await env.restartAfterCrash(opened);
      const journal = await reopened.store.readJournal(session.id, run.runId);
      expect(
        journal.records
          .filter((record) => record.type === 'token')
          .map((record) => (record.data as { text?: unknown }).text),
      ).toEqual(['kept by sync alone']);
    },
  );

  suite.test(
    'C2',
    'close makes a save made without fsync survive a power loss even when its own rewrite fails: adapter.sync() does it',
    async (env) => {
      const { opened, id } = await sessionSavedWithoutFsync(env);
      failRewritesOf(opened, id);
      await env.closeStore(opened);
      await env.crash(opened);
      const reopened = await env.openStore({}, opened.namespace);
      expect(contentsOf(await reopened.store.load(id))).toEqual(['saved without fsync']);
    },
  );

  suite.test(
    'C1',
    'flushAll makes a save made without fsync survive a power loss (adapter.sync)',
    async (env) => {
      const { opened, id } = await sessionSavedWithoutFsync(env);
      await opened.store.flushAll();
      const reopened = await env.restartAfterCrash(opened);
      expect(contentsOf(await reopened.store.load(id))).toEqual(['saved without fsync']);
    },
  );

  suite.test(
    'C1',
    'flushAll makes journal appends made without a flush survive a power loss (adapter.sync)',
    async (env) => {
      // At "terminal" durability the tokens are appended with durability "none": only the
      // adapter's sync() at the end of flushAll can put them on stable storage.
      const opened = await env.openStore({ journal: { durability: 'terminal' } });
      const session = await opened.store.create({ id: env.id() }, { fsync: true });
      const run = await opened.store.beginRun(session.id, { userMessage: userInput('question') });
      await run.append({ type: 'token', data: { text: 'kept by sync' } });
      await opened.store.flushAll();
      const reopened = await env.restartAfterCrash(opened);
      await env.clock.advance(60_000);
      const loaded = await reopened.store.load(session.id);
      const recovered = loaded.messages
        .filter((message) => message.role === 'assistant' && message.recovered === true)
        .map((message) => message.content)
        .join('');
      expect(recovered, contentsOf(loaded).join(' | ')).toBe('kept by sync');
    },
  );

  suite.test(
    'C2',
    'close makes a save made without fsync survive a power loss right after it',
    async (env) => {
      const { opened, id } = await sessionSavedWithoutFsync(env);
      await env.closeStore(opened);
      await env.crash(opened);
      const reopened = await env.openStore({}, opened.namespace);
      expect(contentsOf(await reopened.store.load(id))).toEqual(['saved without fsync']);
    },
  );
}
