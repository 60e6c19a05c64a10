/**
 * B5, E1: `beginRun({ replaceFrom })` answers a question again (a regenerate): the old
 * question and what followed it are dropped in the very write that records the pending
 * turn. Found from outside (issue 35): a regenerate that began its run and then dropped the
 * old question in a second write left the question twice when it died in between.
 */
import { InvalidIdError, InvalidInputError } from '@keepsake/core';
import { expect } from 'vitest';
import { contentsOf, expectTypedError, textMessage, userInput } from '../harness/fixtures.js';
import { PAST_GRACE_MS } from '../harness/quiet-worker.js';
import type { SpecRegistrar } from '../harness/suite.js';

export function defineReplaceFromTests(suite: SpecRegistrar): void {
  suite.test(
    'B5',
    'beginRun({ replaceFrom }) drops the message and what followed it in the write that begins the run: a crash right after leaves the question once',
    async (env) => {
      const worker = await env.openStore();
      const question = textMessage(env, 'user', 'Hi');
      const session = await worker.store.create(
        { id: env.id(), messages: [textMessage(env, 'user', 'earlier'), question] },
        { fsync: true },
      );
      session.messages.push(textMessage(env, 'assistant', 'old answer'));
      await worker.store.save(session, { fsync: true });
      const answered = session.revision;
      const run = await worker.store.beginRun(session.id, {
        userMessage: userInput('Hi'),
        replaceFrom: question.id,
      });
      // The worker dies at once; another instance repairs the turn past the grace period.
      env.killProcess(worker);
      await env.clock.advance(PAST_GRACE_MS);
      const reader = await env.openStore();
      const repaired = await reader.store.load(session.id);
      expect(contentsOf(repaired).filter((content) => content === 'Hi')).toHaveLength(1);
      expect(contentsOf(repaired)).not.toContain('old answer');
      expect(contentsOf(repaired)[0]).toBe('earlier');
      expect(repaired.messages.at(-1)?.marker?.runId).toBe(run.runId);
      // B5: the deliberate shrink keeps the revision before it.
      expect(await reader.store.retainedRevisions(session.id)).toContain(answered);
    },
  );

  suite.test(
    'B5',
    'beginRun({ replaceFrom }) with an id the transcript lacks, or one that is not an id, is refused and writes nothing',
    async (env) => {
      const { store } = await env.openStore();
      const session = await store.create(
        { id: env.id(), messages: [textMessage(env, 'user', 'Hi')] },
        { fsync: true },
      );
      await expectTypedError(
        store.beginRun(session.id, { userMessage: userInput('Hi'), replaceFrom: env.id('msg') }),
        InvalidInputError,
      );
      await expectTypedError(
        store.beginRun(session.id, {
          userMessage: userInput('Hi'),
          replaceFrom: 'not an id!' as string,
        }),
        InvalidIdError,
      );
      const reader = await env.openStore();
      const stored = await reader.store.load(session.id);
      expect(stored.pending).toBeNull();
      expect(contentsOf(stored)).toEqual(['Hi']);
      expect(stored.revision).toBe(session.revision);
    },
  );
}
