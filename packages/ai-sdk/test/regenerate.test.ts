import {
  createSessionStore,
  ManualClock,
  memoryAdapter,
  RevisionConflictError,
} from '@keepsake/core';
import type { UIMessage } from 'ai';
import { afterEach, describe, expect, it } from 'vitest';
import {
  createResumableStreamContext,
  loadChat,
  type ResumableStreamContext,
} from '../src/index.js';
import {
  chunkStream,
  gatedStream,
  readAll,
  scriptedAnswer,
  userMessage,
} from './helpers/chunk-streams.js';

/** The recovery grace, on the stores' ManualClock (no test waits for real time). */
const GRACE_MS = 300;

const contexts: ResumableStreamContext[] = [];
const releases: (() => void)[] = [];
afterEach(async () => {
  for (const release of releases.splice(0)) release();
  for (const context of contexts.splice(0)) {
    await context.settle();
    context.close();
  }
});

/** Two server instances over one backend, each with its own store, on one clock. */
function twoInstances() {
  const adapter = memoryAdapter();
  const clock = new ManualClock();
  const open = () => {
    const store = createSessionStore({ adapter, clock, recovery: { graceMs: GRACE_MS } });
    const context = createResumableStreamContext({ store, graceMs: GRACE_MS, pollIntervalMs: 20 });
    contexts.push(context);
    return { store, context };
  };
  return { clock, first: open(), second: open(), open };
}

const answer = (text: string) => () => chunkStream(scriptedAnswer([text]));

async function ask(
  context: ResumableStreamContext,
  chatId: string,
  message: UIMessage,
  text: string,
): Promise<void> {
  await readAll(await context.resumableStream(chatId, answer(text), { message }));
  await context.settle();
}

function texts(chat: UIMessage[]): string[] {
  return chat.map(
    (message) =>
      `${message.role}:${message.parts
        .map((part) => (part.type === 'text' ? part.text : ''))
        .join('')}`,
  );
}

describe('regenerate answers again only what the client saw (B4, B5)', () => {
  it('B4: a regenerate refuses to drop a question another instance added after it, and changes nothing', async () => {
    const { first, second } = twoInstances();
    await ask(first.context, 'chat-1', userMessage('q1', 'Hi'), 'hello');
    // Another instance (another tab) asks a second question; this client never showed it.
    await ask(second.context, 'chat-1', userMessage('q2', 'And then?'), 'then this');
    const before = await loadChat(first.store, 'chat-1');
    const refused = await first.context
      .resumableStream('chat-1', answer('again'), {
        message: userMessage('q1', 'Hi'),
        trigger: 'regenerate-message',
      })
      .catch((error: unknown) => error);
    expect(RevisionConflictError.isInstance(refused), String(refused)).toBe(true);
    expect(await loadChat(second.store, 'chat-1')).toStrictEqual(before);
  });

  it('B4: with lastMessageId, a client that saw the whole chat regenerates from an earlier question; a stale one is refused', async () => {
    const { first, second } = twoInstances();
    await ask(first.context, 'chat-2', userMessage('q1', 'Hi'), 'hello');
    await ask(first.context, 'chat-2', userMessage('q2', 'And then?'), 'then this');
    const seen = await loadChat(first.store, 'chat-2');
    // Another instance adds a turn after the client loaded the chat.
    await ask(second.context, 'chat-2', userMessage('q3', 'More?'), 'more');
    const stale = await first.context
      .resumableStream('chat-2', answer('again'), {
        message: userMessage('q1', 'Hi'),
        trigger: 'regenerate-message',
        lastMessageId: seen.at(-1)!.id,
      })
      .catch((error: unknown) => error);
    expect(RevisionConflictError.isInstance(stale), String(stale)).toBe(true);
    expect(texts(await loadChat(second.store, 'chat-2'))).toHaveLength(6);
    // Reloaded, the client sees all of it and regenerates deliberately from q1.
    const current = await loadChat(first.store, 'chat-2');
    await readAll(
      await first.context.resumableStream('chat-2', answer('again'), {
        message: userMessage('q1', 'Hi'),
        trigger: 'regenerate-message',
        lastMessageId: current.at(-1)!.id,
      }),
    );
    await first.context.settle();
    expect(texts(await loadChat(second.store, 'chat-2'))).toEqual(['user:Hi', 'assistant:again']);
  });

  it('B5: the drop and the new run are one write: an instance that dies right after the regenerate began leaves the question once', async () => {
    const { clock, first, open } = twoInstances();
    await ask(first.context, 'chat-3', userMessage('q1', 'Hi'), 'hello');
    // The regenerated answer never comes: its instance dies once the run has begun. FAULT
    // INJECTION: any further write of the session by this instance never happens (a
    // regenerate that dropped the old question in a second write would hang here).
    first.store.save = () => new Promise(() => {});
    const gate = gatedStream(scriptedAnswer(['never']));
    releases.push(() => gate.releaseAll());
    await first.context.resumableStream('chat-3', () => gate.stream, {
      message: userMessage('q1', 'Hi'),
      trigger: 'regenerate-message',
    });
    // Another instance, past the grace period, repairs the dead run's turn.
    await clock.advance(GRACE_MS * 2);
    const later = open();
    const chat = await loadChat(later.store, 'chat-3');
    expect(texts(chat).filter((text) => text === 'user:Hi')).toHaveLength(1);
    expect(chat.map((message) => message.role)).toEqual(['user', 'assistant']);
    expect(texts(chat)).not.toContain('assistant:hello');
  });
});
