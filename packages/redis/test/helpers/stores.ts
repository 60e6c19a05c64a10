import { randomBytes } from 'node:crypto';
import { createMessage, createSessionStore, type Message, type SessionStore } from '@keepsake/core';
import { type RedisAdapter, type RedisAdapterOptions, redisAdapter } from '../../src/index.js';

/** A key prefix no other test uses. */
export function uniquePrefix(label: string): string {
  return `test:${label}:${randomBytes(4).toString('hex')}`;
}

/** A store over a new adapter; `close()` closes both, even when the server is gone. */
export function openStore(options: RedisAdapterOptions): {
  store: SessionStore;
  adapter: RedisAdapter;
  close(): Promise<void>;
} {
  const adapter = redisAdapter(options);
  const store = createSessionStore({ adapter });
  return {
    store,
    adapter,
    async close() {
      await store.close().catch(() => undefined);
      await adapter.close();
    },
  };
}

export function userMessage(id: string, text = id): Message {
  return createMessage({ id, role: 'user', content: text });
}

/** The ids of a session's messages, in order. */
export function messageIds(session: { messages: ReadonlyArray<{ id: string }> }): string[] {
  return session.messages.map((message) => message.id);
}

/** True when `expected` appears in `actual` in the same order (other ids may sit between). */
export function isSubsequence(expected: readonly string[], actual: readonly string[]): boolean {
  let position = 0;
  for (const id of actual) if (id === expected[position]) position++;
  return position === expected.length;
}
