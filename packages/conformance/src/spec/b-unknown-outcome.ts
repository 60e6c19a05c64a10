/**
 * B4 (with B2): a save whose outcome the store does not know. Its write may have landed (the
 * document is there, then its fsync failed or the answer was lost): a retry from the same
 * store must recognise its own revision, not report it as another writer's, and must not add
 * the change twice. A write that did not land, or one another writer followed, keeps the
 * ordinary answers.
 */
import {
  AlreadyExistsError,
  BackendError,
  RevisionConflictError,
  type Session,
  WriteOutcomeUnknownError,
} from '@keepsake/core';
import { expect } from 'vitest';
import type { OpenedStore, TestEnvironment } from '../harness/environment.js';
import { contentsOf, expectTypedError, textMessage } from '../harness/fixtures.js';
import type { SpecRegistrar } from '../harness/suite.js';

type Failure = () => Error;

const failures: ReadonlyArray<readonly [string, Failure]> = [
  [
    'WriteOutcomeUnknownError',
    () =>
      new WriteOutcomeUnknownError('injected', 'write a session', {
        cause: new Error('EIO: fsync of the directory failed (injected)'),
      }),
  ],
  [
    'a plain BackendError',
    () => new BackendError('injected', 'write a session', { cause: new Error('ETIMEDOUT') }),
  ],
];

export function defineUnknownOutcomeTests(suite: SpecRegistrar): void {
  createRetryTests(suite);
  suite.test(
    'B4',
    'a save that landed and then failed is recognised as this store’s own on retry: no conflict, nothing twice',
    async (env) => {
      for (const [label, failure] of failures) {
        const opened = await env.openStore();
        const session = await twoMessages(env, opened);
        session.messages.push(textMessage(env, 'user', 'third'));
        landsThenFails(opened, session.id, failure);
        const error = await expectTypedError(
          opened.store.save(session, { fsync: true }),
          BackendError,
        );
        if (label === 'WriteOutcomeUnknownError') {
          expect(WriteOutcomeUnknownError.isInstance(error)).toBe(true);
          expect(error.isRetryable, 'an unknown outcome is retryable').toBe(true);
        }
        const saved = await opened.store.save(session, { fsync: true });
        expect(contentsOf(saved), label).toEqual(['first', 'second', 'third']);
        session.messages.push(textMessage(env, 'assistant', 'fourth'));
        await opened.store.save(session, { fsync: true });
        const reader = await env.openStore();
        const loaded = await reader.store.load(session.id);
        expect(contentsOf(loaded), `${label}: stored once each`).toEqual([
          'first',
          'second',
          'third',
          'fourth',
        ]);
        expect(loaded.revision).toBe(session.revision);
      }
    },
  );

  suite.test(
    'B4',
    'after a save whose outcome is unknown, a write of another instance is still a conflict',
    async (env) => {
      const mine = await env.openStore();
      const session = await twoMessages(env, mine);
      session.messages.push(textMessage(env, 'user', 'mine'));
      landsThenFails(mine, session.id, failures[0]![1]);
      await expectTypedError(mine.store.save(session, { fsync: true }), BackendError);
      const other = await env.openStore();
      const theirs = await other.store.load(session.id);
      theirs.title = 'changed elsewhere';
      await other.store.save(theirs, { fsync: true });

      await expectTypedError(mine.store.save(session, { fsync: true }), RevisionConflictError);
      const reader = await env.openStore();
      const loaded = await reader.store.load(session.id);
      expect(loaded.title).toBe('changed elsewhere');
      expect(contentsOf(loaded)).toEqual(['first', 'second', 'mine']);
    },
  );

  suite.test(
    'B4',
    'a save that failed before its write landed is written by the retry, once',
    async (env) => {
      const opened = await env.openStore();
      const session = await twoMessages(env, opened);
      session.messages.push(textMessage(env, 'user', 'third'));
      opened.adapter.inject({
        method: 'putDocument',
        times: 1,
        match: (args) => args[0] === 'sessions' && args[1] === session.id,
        error: failures[0]![1],
      });
      await expectTypedError(opened.store.save(session, { fsync: true }), BackendError);
      await opened.store.save(session, { fsync: true });
      const reader = await env.openStore();
      expect(contentsOf(await reader.store.load(session.id))).toEqual(['first', 'second', 'third']);
    },
  );
}

async function twoMessages(env: TestEnvironment, opened: OpenedStore): Promise<Session> {
  return opened.store.create(
    {
      id: env.id(),
      title: 'unknown outcome',
      messages: [textMessage(env, 'user', 'first'), textMessage(env, 'assistant', 'second')],
    },
    { fsync: true },
  );
}

/** FAULT INJECTION: the next write of `id` reaches the backend, then reports `failure`. */
function createRetryTests(suite: SpecRegistrar): void {
  suite.test(
    'B4',
    'a create retried after an unknown outcome meets its own document and succeeds; a different document under the id is still refused',
    async (env) => {
      const opened = await env.openStore();
      const id = env.id();
      const input = {
        id,
        title: 'Trip plan',
        metadata: { owner: 'alice' },
        messages: [{ role: 'user' as const, content: 'first' }],
      };
      landsThenFails(opened, id, failures[0]![1]);
      await expectTypedError(opened.store.create(input, { fsync: true }), WriteOutcomeUnknownError);
      const retried = await opened.store.create(input, { fsync: true });
      expect(retried).toMatchObject({ id, title: 'Trip plan', metadata: { owner: 'alice' } });
      expect(contentsOf(retried)).toEqual(['first']);
      // The retry returned the stored document: saving on from it conflicts with nothing.
      retried.messages.push(textMessage(env, 'assistant', 'second'));
      await opened.store.save(retried, { fsync: true });
      // Another store's retry of the same create after that is another document now.
      const other = await env.openStore();
      await expectTypedError(other.store.create(input), AlreadyExistsError);
      const fresh = env.id();
      landsThenFails(opened, fresh, failures[0]![1]);
      await expectTypedError(
        opened.store.create({ ...input, id: fresh }, { fsync: true }),
        WriteOutcomeUnknownError,
      );
      await expectTypedError(
        other.store.create({ ...input, id: fresh, title: 'Another plan' }),
        AlreadyExistsError,
      );
      const reader = await env.openStore();
      expect(contentsOf(await reader.store.load(id))).toEqual(['first', 'second']);
      expect((await reader.store.load(fresh)).title).toBe('Trip plan');
    },
  );
}

function landsThenFails(opened: OpenedStore, id: string, failure: Failure): void {
  opened.adapter.inject({
    method: 'putDocument',
    times: 1,
    match: (args) => args[0] === 'sessions' && args[1] === id,
    replace: async (_args, real) => {
      const result = (await real()) as { ok: boolean };
      expect(result.ok, 'the injected write itself landed').toBe(true);
      throw failure();
    },
  });
}
