/**
 * A4 (with B7): fields Keepsake does not know round-trip unchanged, and they are private, as
 * are `metadata` and the transcript: no summary read (a `list()` entry, a
 * `load(id, { summaryOnly: true })` view) returns them, from the cache or from storage, and a
 * copy of a summary view cannot be saved over the session and erase them.
 */
import { type Session, type SessionStore, SummaryOnlyError } from '@keepsake/core';
import { expect } from 'vitest';
import type { TestEnvironment } from '../harness/environment.js';
import { expectTypedError, textMessage } from '../harness/fixtures.js';
import type { SpecRegistrar } from '../harness/suite.js';

export function definePrivateStateTests(suite: SpecRegistrar): void {
  suite.test(
    'A4',
    'metadata, provider state and the transcript stay out of every summary read, also after a restart',
    async (env) => {
      const opened = await env.openStore();
      const secret = `secret-${env.id()}`;
      const session = await opened.store.create(
        {
          id: env.id(),
          title: 'private parts',
          metadata: { apiToken: secret },
          payload: { items: [{ type: 'reasoning', encrypted_content: secret }] },
          messages: [textMessage(env, 'user', `a question about ${secret}`)],
        },
        { fsync: true },
      );
      session.toolCalls.push({ id: 'call-1', name: 'lookup', args: { query: secret }, done: true });
      await opened.store.save(session, { fsync: true });

      const check = async (store: SessionStore, where: string) => {
        const view = await store.load(session.id, { summaryOnly: true });
        expect(JSON.stringify(view), `${where}: the summary view`).not.toContain(secret);
        expect(view, where).toMatchObject({
          id: session.id,
          title: 'private parts',
          revision: session.revision,
          createdAt: session.createdAt,
          updatedAt: session.updatedAt,
          messages: [],
          toolCalls: [],
          metadata: {},
        });
        expect((view as Record<string, unknown>).payload, where).toBeUndefined();
        const listed = (await store.list({ limit: 1000 })).sessions.find(
          (entry) => entry.id === session.id,
        );
        expect(listed, `${where}: listed`).toBeDefined();
        expect(JSON.stringify(listed), `${where}: the list entry`).not.toContain(secret);
      };
      await check(opened.store, 'from the live session');
      const reopened = await env.restartGracefully(opened);
      await check(reopened.store, 'from storage');

      // A full load still has every field, unchanged (A4).
      const full = (await reopened.store.load(session.id)) as Session & {
        payload: { items: Array<{ encrypted_content: string }> };
      };
      expect(full.metadata).toEqual({ apiToken: secret });
      expect(full.payload.items[0]?.encrypted_content).toBe(secret);
      expect(full.toolCalls[0]?.args).toEqual({ query: secret });
    },
  );

  suite.test(
    'A4',
    'a copy spread from a summary view is refused (B5), so what the view leaves out is never erased',
    async (env) => {
      const opened = await env.openStore();
      // No messages: a shrink check cannot stand in for the refusal here.
      const session = await privateSession(env, opened.store);
      const view = await opened.store.load(session.id, { summaryOnly: true });
      await expectTypedError(opened.store.save(view), SummaryOnlyError);
      const copy = { ...view, title: 'renamed from a summary' } as Session;
      await expectTypedError(opened.store.save(copy), SummaryOnlyError);
      const assigned = Object.assign({}, view, { title: 'assigned' }) as Session;
      await expectTypedError(opened.store.save(assigned), SummaryOnlyError);

      const reader = await env.openStore();
      const loaded = (await reader.store.load(session.id)) as Session & { payload: unknown };
      expect(loaded.title).toBe('kept');
      expect(loaded.metadata).toEqual({ owner: 'user-1' });
      expect(loaded.payload).toEqual({ state: 'opaque' });
    },
  );
}

function privateSession(env: TestEnvironment, store: SessionStore): Promise<Session> {
  return store.create(
    {
      id: env.id(),
      title: 'kept',
      metadata: { owner: 'user-1' },
      payload: { state: 'opaque' },
    },
    { fsync: true },
  );
}
