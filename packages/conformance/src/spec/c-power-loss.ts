/**
 * C1, C2: what `flushAll()` and `close()` promise about writes made without fsync — they
 * reach stable storage through `adapter.sync()`. Issue 24: an adapter whose `sync()` did
 * nothing passed every test, because no test saved without fsync and then lost power.
 */
import { expect } from 'vitest';
import type { TestEnvironment } from '../harness/environment.js';
import { contentsOf, textMessage, userInput } from '../harness/fixtures.js';
import type { SpecRegistrar } from '../harness/suite.js';

async function sessionSavedWithoutFsync(env: TestEnvironment) {
  const opened = await env.openStore();
  const session = await opened.store.create({ id: env.id(), title: 'power loss' }, { fsync: true });
  session.messages.push(textMessage(env, 'user', 'saved without fsync'));
  await opened.store.save(session);
  return { opened, id: session.id };
}

export function definePowerLossTests(suite: SpecRegistrar): void {
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
