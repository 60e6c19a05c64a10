import {
  InvalidConfigError,
  InvalidIdError,
  InvalidInputError,
  type SessionStore,
  ShrinkRefusedError,
} from '@keepsake/core';
import { type UIMessage, validateUIMessages } from 'ai';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  chatIdOfSession,
  createResumableStreamContext,
  loadChat,
  saveChat,
  sessionIdOfChat,
} from '../src/index.js';
import { chunkStream, userMessage } from './helpers/chunk-streams.js';
import { type Backend, createBackend } from './helpers/stores.js';
import { anyId, uiMessages } from './helpers/ui-message-arbitraries.js';

/** Runs per backend: the fs one fsyncs each save, so it gets fewer. */
const runs = { memory: 150, fs: 40 } as const;

describe.each(['memory', 'fs'] as const)('chats as UIMessage[] on %s', (backendName) => {
  let backend: Backend;
  let writer: SessionStore;
  beforeAll(async () => {
    backend = await createBackend(backendName);
    writer = backend.open();
  });
  afterAll(() => backend.dispose());

  it('round trip: every part type in every state, metadata and any id come back as saved, and validate', async () => {
    let round = 0;
    await fc.assert(
      fc.asyncProperty(anyId, uiMessages, async (chatId, messages) => {
        // A chat per round: ids repeat across rounds (shrinking), chats must not.
        const id = `${chatId}#${round++}`.slice(-60);
        await saveChat(writer, id, messages);
        // Another store over the same backend: a cold cache, as after a restart (C3).
        const reader = backend.open();
        try {
          const loaded = await loadChat(reader, id);
          expect(loaded).toStrictEqual(messages);
          // The AI SDK's own validation accepts what was loaded, and changes nothing of it.
          const validated = await validateUIMessages({ messages: loaded });
          expect(validated).toStrictEqual(messages);
        } finally {
          await reader.close();
          await writer.delete(sessionIdOfChat(id));
        }
      }),
      { numRuns: runs[backendName] },
    );
  });

  it('appending saves only what is new; a replaced message keeps its place; a drop needs allowShrink (B5)', async () => {
    const first = [userMessage('m1', 'one'), assistant('m2', 'two')];
    await saveChat(writer, 'append-chat', first);
    const more = [...first, userMessage('m3', 'three')];
    await saveChat(writer, 'append-chat', more);
    const edited = [first[0]!, assistant('m2', 'two, edited'), more[2]!];
    await saveChat(writer, 'append-chat', edited);
    expect(await loadChat(backend.open(), 'append-chat')).toStrictEqual(edited);

    const error = await saveChat(writer, 'append-chat', [edited[0]!]).catch((caught) => caught);
    expect(ShrinkRefusedError.isInstance(error)).toBe(true);
    expect(await loadChat(writer, 'append-chat')).toStrictEqual(edited);
    await saveChat(writer, 'append-chat', [edited[0]!], { allowShrink: true });
    expect(await loadChat(backend.open(), 'append-chat')).toStrictEqual([edited[0]]);
  });

  it('a chat never saved loads as []', async () => {
    expect(await loadChat(writer, 'never-saved')).toEqual([]);
  });
});

describe('ids and bad input', () => {
  it('chat ids: safe ids are used as they are, others are encoded, the mapping is injective and reversible', () => {
    expect(sessionIdOfChat('Xa9_-')).toBe('Xa9_-');
    fc.assert(
      fc.property(anyId, anyId, (left, right) => {
        let leftId: string;
        let rightId: string;
        try {
          leftId = sessionIdOfChat(left);
          rightId = sessionIdOfChat(right);
        } catch (error) {
          // Only an id too long to encode is refused.
          expect(InvalidIdError.isInstance(error)).toBe(true);
          return;
        }
        expect(leftId).toMatch(/^[A-Za-z0-9_-]{1,128}$/);
        expect(chatIdOfSession(leftId)).toBe(left);
        expect(leftId === rightId).toBe(left === right);
      }),
    );
    // A safe id that looks like an encoded one is encoded too, so it cannot collide.
    const lookalike = sessionIdOfChat('__eYQ');
    expect(lookalike).not.toBe('__eYQ');
    expect(chatIdOfSession(lookalike)).toBe('__eYQ');
  });

  it('refuses what it cannot store, with typed errors and nothing written', async () => {
    const backend = await createBackend('memory');
    const store = backend.open();
    try {
      for (const chatId of ['', 'x'.repeat(200).replace(/x/g, 'é'), '\uD800', 42]) {
        const error = await saveChat(store, chatId as string, [userMessage('a', 'b')]).catch(
          (caught) => caught,
        );
        expect(InvalidIdError.isInstance(error), String(chatId)).toBe(true);
      }
      const bad: unknown[] = [
        null,
        { id: '', role: 'user', parts: [] },
        { id: 'a', role: 'tool', parts: [] },
        { id: 'a', role: 'user', parts: 'text' },
        { id: 'a', role: 'user', parts: [{ text: 'no type' }] },
        { id: 'a', role: 'user', parts: [{ type: 'data-x', data: new Date() }] },
        { id: 'a', role: 'user', parts: [{ type: 'data-x', data: 10n }] },
      ];
      for (const message of bad) {
        const error = await saveChat(store, 'bad-input', [message as UIMessage]).catch(
          (caught) => caught,
        );
        expect(InvalidInputError.isInstance(error), JSON.stringify(String(message))).toBe(true);
      }
      const twice = await saveChat(store, 'bad-input', [
        userMessage('same', 'a'),
        userMessage('same', 'b'),
      ]).catch((caught) => caught);
      expect(InvalidInputError.isInstance(twice)).toBe(true);
      expect(await loadChat(store, 'bad-input')).toEqual([]);
    } finally {
      await backend.dispose();
    }
  });
});

describe('stream context input', () => {
  it('refuses bad options with InvalidConfigError naming the option', async () => {
    const backend = await createBackend('memory');
    const store = backend.open();
    try {
      const bad: unknown[] = [
        undefined,
        {},
        { store: {} },
        { store, grace: 1000 },
        { store, graceMs: 0 },
        { store, pollIntervalMs: Number.NaN },
        { store, waitUntil: 'later' },
        { store, onError: 42 },
      ];
      for (const options of bad) {
        expect(
          () => createResumableStreamContext(options as { store: SessionStore }),
          JSON.stringify(options ?? null, (key, value) => (key === 'store' ? typeof value : value)),
        ).toThrow(expect.objectContaining({ code: 'invalid_config' }));
      }
      const error = (() => {
        try {
          createResumableStreamContext({ store, grace: 1 } as never);
        } catch (caught) {
          return caught;
        }
      })();
      expect(InvalidConfigError.isInstance(error)).toBe(true);
      expect((error as Error).message).toContain('`grace`');
    } finally {
      await backend.dispose();
    }
  });

  it('refuses a message that cannot start an answer, before anything is written', async () => {
    const backend = await createBackend('memory');
    const store = backend.open();
    const context = createResumableStreamContext({ store });
    const makeStream = () => chunkStream([]);
    try {
      const refusals: Array<[string, unknown, (error: unknown) => boolean]> = [
        ['', userMessage('q', 'hi'), InvalidIdError.isInstance],
        ['chat', { id: 'a', role: 'assistant', parts: [] }, InvalidInputError.isInstance],
        ['chat', { id: 'a', role: 'user' }, InvalidInputError.isInstance],
        ['chat', null, InvalidInputError.isInstance],
      ];
      for (const [chatId, message, isExpected] of refusals) {
        const error = await context
          .resumableStream(chatId, makeStream, { message: message as UIMessage })
          .catch((caught) => caught);
        expect(isExpected(error), JSON.stringify(message)).toBe(true);
      }
      const badTrigger = await context
        .resumableStream('chat', makeStream, {
          message: userMessage('q', 'hi'),
          trigger: 'again' as never,
        })
        .catch((caught) => caught);
      expect(InvalidInputError.isInstance(badTrigger)).toBe(true);
      expect(await store.exists('chat')).toBe(false);
    } finally {
      context.close();
      await backend.dispose();
    }
  });
});

function assistant(id: string, text: string): UIMessage {
  return { id, role: 'assistant', parts: [{ type: 'text', text, state: 'done' }] };
}
