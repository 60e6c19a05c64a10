/**
 * E1, E5, E6, F1: what `beginRun` was given for the user's turn reaches the transcript,
 * however the turn ends. Found outside the suite: attachments were kept in the pending
 * turn only, and lost when it was cleared.
 */
import { InvalidInputError } from '@keepsake/core';
import { expect } from 'vitest';
import type { OpenedStore, TestEnvironment } from '../harness/environment.js';
import { expectTypedError, textMessage, userInput } from '../harness/fixtures.js';
import type { SpecRegistrar } from '../harness/suite.js';

const SCREENSHOT = { name: 'screenshot.png', mimeType: 'image/png' };
const PAST_GRACE_MS = 10 * 60_000;

type Ending = 'complete' | 'cancel' | 'fail' | 'crash recovery';

/** Starts a run with an attachment, ends it as `ending` says, and returns the store to read. */
async function endTurnWithAttachment(
  env: TestEnvironment,
  ending: Ending,
  eagerCheckpoint = false,
): Promise<{ opened: OpenedStore; id: string }> {
  const opened = await env.openStore();
  const session = await opened.store.create({ id: env.id() }, { fsync: true });
  const run = await opened.store.beginRun(session.id, {
    userMessage: userInput('please restart'),
    attachments: [SCREENSHOT],
  });
  await run.append({ type: 'token', data: { text: 'restarting' } });
  if (eagerCheckpoint) {
    // A common checkpoint pattern: the app copies the question into the transcript itself.
    const live = await opened.store.load(session.id);
    live.messages.push(live.pending!.userMessage);
    await opened.store.save(live, { fsync: true });
  }
  if (ending === 'complete') await run.complete();
  if (ending === 'cancel') await run.cancel();
  if (ending === 'fail') await run.fail(new Error('the model gave up'));
  if (ending !== 'crash recovery') return { opened, id: session.id };
  const reopened = await env.restartAfterCrash(opened);
  await env.clock.advance(PAST_GRACE_MS);
  return { opened: reopened, id: session.id };
}

export function defineTurnAttachmentTests(suite: SpecRegistrar): void {
  for (const ending of ['complete', 'cancel', 'fail', 'crash recovery'] as const) {
    const clause = ending === 'complete' ? 'E5' : ending === 'crash recovery' ? 'F1' : 'E6';
    suite.test(
      clause,
      `the attachments given to beginRun stay on the user's message after ${ending}`,
      async (env) => {
        const { opened, id } = await endTurnWithAttachment(env, ending);
        const reader = await env.openStore();
        for (const store of [opened.store, reader.store]) {
          const session = await store.load(id);
          expect(session.pending, 'the turn has ended').toBeNull();
          const question = session.messages.find((message) => message.role === 'user');
          expect(question?.content).toBe('please restart');
          expect(question?.attachments).toEqual([SCREENSHOT]);
        }
      },
    );
  }

  for (const ending of ['complete', 'cancel', 'fail', 'crash recovery'] as const) {
    suite.test(
      'E1',
      `the attachments given to beginRun reach the question the app already copied into the transcript, once, after ${ending}`,
      async (env) => {
        const { opened, id } = await endTurnWithAttachment(env, ending, true);
        const reader = await env.openStore();
        for (const store of [opened.store, reader.store]) {
          const session = await store.load(id);
          expect(session.pending, 'the turn has ended').toBeNull();
          const questions = session.messages.filter((message) => message.role === 'user');
          expect(questions.map((message) => message.content)).toEqual(['please restart']);
          expect(questions[0]?.attachments).toEqual([SCREENSHOT]);
        }
      },
    );
  }

  suite.test(
    'E1',
    'beginRun refuses a userMessage id the transcript already has (the question would be dropped)',
    async (env) => {
      const { store } = await env.openStore();
      const earlier = textMessage(env, 'user', 'first question');
      const session = await store.create({ id: env.id(), messages: [earlier] });
      await expectTypedError(
        store.beginRun(session.id, { userMessage: userInput('second', { id: earlier.id }) }),
        InvalidInputError,
      );
      expect(session.pending).toBeNull();
      expect(store.activeRun(session.id)).toBeNull();
      // The session is free for a run with a new id.
      const run = await store.beginRun(session.id, { userMessage: userInput('second') });
      await run.complete({ assistantMessages: [{ role: 'assistant', content: 'answer' }] });
      const reader = await env.openStore();
      const stored = await reader.store.load(session.id);
      expect(stored.messages.map((message) => message.content)).toEqual([
        'first question',
        'second',
        'answer',
      ]);
    },
  );
}
