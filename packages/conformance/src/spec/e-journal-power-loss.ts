/**
 * E2: at `group` and `each` durability an append that resolved is on stable storage. Issue
 * 24: an adapter that skipped the group-commit flush passed, because no test crashed a
 * `group` stream after its appends resolved.
 */
import type { LogDurability } from '@keepsake/core';
import { expect } from 'vitest';
import { contentsOf, userInput } from '../harness/fixtures.js';
import type { SpecRegistrar } from '../harness/suite.js';

const DURABLE_POLICIES = ['group', 'each'] as const satisfies ReadonlyArray<
  Exclude<LogDurability, 'none'>
>;

export function defineJournalPowerLossTests(suite: SpecRegistrar): void {
  for (const durability of DURABLE_POLICIES) {
    suite.test(
      'E2',
      `at "${durability}" durability every resolved append survives a power loss`,
      async (env) => {
        const opened = await env.openStore({ journal: { durability } });
        const session = await opened.store.create({ id: env.id() }, { fsync: true });
        const run = await opened.store.beginRun(session.id, {
          userMessage: userInput('stream through a power loss'),
        });
        const tokens = ['one ', 'two ', 'three'];
        for (const text of tokens) await run.append({ type: 'token', data: { text } });
        const reopened = await env.restartAfterCrash(opened);
        await env.clock.advance(60_000);
        const loaded = await reopened.store.load(session.id);
        const recovered = loaded.messages
          .filter((message) => message.role === 'assistant' && message.recovered === true)
          .map((message) => message.content)
          .join('');
        expect(recovered, contentsOf(loaded).join(' | ')).toBe(tokens.join(''));
      },
    );
  }
}
