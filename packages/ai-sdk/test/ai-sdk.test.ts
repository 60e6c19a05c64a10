import type { SessionStore } from '@keepsake/core';
import {
  convertToModelMessages,
  createUIMessageStreamResponse,
  isStepCount,
  parseJsonEventStream,
  streamText,
  tool,
  toUIMessageStream,
  type UIMessageChunk,
  uiMessageChunkSchema,
  validateUIMessages,
} from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  createResumableStreamContext,
  loadChat,
  MARKER_PART_TYPE,
  saveChat,
  sessionIdOfChat,
} from '../src/index.js';
import { messageFromChunks } from '../src/message-from-chunks.js';
import { answerWords, dataSchemas, readAll, userMessage } from './helpers/chunk-streams.js';
import { scriptedModel } from './helpers/scripted-model.js';
import { type Backend, createBackend } from './helpers/stores.js';

const tools = {
  search_notes: tool({
    inputSchema: z.object({ query: z.string() }),
    execute: async ({ query }) => ({ query, hits: 2 }),
  }),
};

/** What `DefaultChatTransport` does with a response body: SSE parsed against the chunk schema. */
async function readAsTheClientDoes(response: Response): Promise<UIMessageChunk[]> {
  const chunks: UIMessageChunk[] = [];
  for await (const result of parseJsonEventStream({
    stream: response.body!,
    schema: uiMessageChunkSchema,
  })) {
    if (!result.success) throw result.error;
    chunks.push(result.value);
  }
  return chunks;
}

/** Resolves once the run has journaled `count` tokens; woken by the store's appends. */
async function tokensJournaled(
  store: SessionStore,
  chatId: string,
  runId: string,
  count: number,
): Promise<void> {
  const sessionId = sessionIdOfChat(chatId);
  let wake = () => {};
  // Taken before each read, so an append in between is not missed.
  const unsubscribe = store.on((event) => {
    if (event.type === 'append' && event.sessionId === sessionId) wake();
  });
  try {
    for (;;) {
      const appended = new Promise<void>((resolve) => {
        wake = resolve;
      });
      const journal = await store.readJournal(sessionId, runId);
      if (journal.records.filter((record) => record.type === 'token').length >= count) return;
      await appended;
    }
  } finally {
    unsubscribe();
  }
}

describe('with streamText and the SSE response the AI SDK client reads', () => {
  let backend: Backend;
  beforeAll(async () => {
    backend = await createBackend('fs');
  });
  afterAll(() => backend.dispose());

  it('a multi-step tool-calling answer from streamText round-trips through the journal and the SSE body', async () => {
    const store = backend.open();
    const context = createResumableStreamContext({ store });
    const words = answerWords(25);
    const stream = await context.resumableStream(
      'streamtext-chat',
      async ({ messages, abortSignal }) => {
        const result = streamText({
          model: scriptedModel(words),
          messages: await convertToModelMessages(messages),
          tools,
          stopWhen: isStepCount(2),
          abortSignal,
        });
        return toUIMessageStream({ stream: result.stream, sendSources: true });
      },
      { message: userMessage('q1', 'What do my notes say?') },
    );
    const chunks = await readAsTheClientDoes(createUIMessageStreamResponse({ stream }));
    await context.settle();
    // Ended: a resume replays it to its finish (E9), the same chunks the client read.
    const resumedLater = await context.resumeExistingStream('streamtext-chat');
    const replayed = await readAll(resumedLater!);
    expect(replayed.map((chunk) => chunk.type)).toEqual(chunks.map((chunk) => chunk.type));
    const chat = await loadChat(backend.open(), 'streamtext-chat');
    expect(chat[1]).toStrictEqual(await messageFromChunks(chunks, 'unused'));
    expect(chat[1]!.parts.map((part) => part.type)).toEqual([
      'step-start',
      'reasoning',
      'tool-search_notes',
      'step-start',
      'source-url',
      'text',
    ]);
    expect(chat[1]!.parts[2]).toMatchObject({
      state: 'output-available',
      output: { query: 'keepsake', hits: 2 },
    });
    const validated = await validateUIMessages({ messages: chat, tools });
    expect(validated).toStrictEqual(chat);
    // What the model is given next time: the chat as stored converts without loss of turns.
    expect(await convertToModelMessages(chat, { tools })).toHaveLength(4);
    context.close();
  });

  it('a stopped answer ends with chunks the client schema accepts, and the marker converts to nothing for the model', async () => {
    const store = backend.open();
    const context = createResumableStreamContext({ store });
    const stream = await context.resumableStream(
      'stopped-chat',
      async ({ messages, abortSignal }) =>
        toUIMessageStream({
          stream: streamText({
            // The model is still writing when the stop comes, however slow the machine.
            model: scriptedModel(answerWords(400), { holdAfterWords: 20 }),
            messages: await convertToModelMessages(messages),
            tools,
            stopWhen: isStepCount(2),
            abortSignal,
          }).stream,
        }),
      { message: userMessage('q1', 'Go on and on') },
    );
    const response = createUIMessageStreamResponse({ stream });
    const reading = readAsTheClientDoes(response);
    // Stop once some text streamed (another request, as a stop button sends it).
    const runId = await context.hasExistingStream('stopped-chat');
    await tokensJournaled(store, 'stopped-chat', runId!, 5);
    expect((await context.stopStream('stopped-chat')).cancelled).toBe(true);
    const chunks = await reading;
    expect(chunks.at(-2)).toMatchObject({ type: MARKER_PART_TYPE, data: { type: 'cancelled' } });
    await context.settle();
    const chat = await loadChat(store, 'stopped-chat');
    await validateUIMessages({ messages: chat, tools, dataSchemas });
    const modelMessages = await convertToModelMessages(chat, { tools });
    expect(JSON.stringify(modelMessages)).not.toContain('Cancelled by the user');
    context.close();
  });
  it("E5: saveChat in toUIMessageStream's onFinish, the usual AI SDK pattern, leaves the answer to the run", async () => {
    const store = backend.open();
    const context = createResumableStreamContext({ store });
    const saves: number[] = [];
    const finished: string[] = [];
    const stream = await context.resumableStream(
      'saved-in-onfinish',
      async ({ chatId, messages, abortSignal }) =>
        toUIMessageStream({
          stream: streamText({
            model: scriptedModel(answerWords(8)),
            messages: await convertToModelMessages(messages),
            tools,
            stopWhen: isStepCount(2),
            abortSignal,
          }).stream,
          originalMessages: messages,
          onFinish: async ({ messages: all }) => {
            await saveChat(store, chatId, all);
            saves.push(all.length);
          },
        }),
      {
        message: userMessage('q1', 'What do my notes say?'),
        onFinish: ({ responseMessage }) => {
          finished.push(responseMessage.id);
        },
      },
    );
    const chunks = await readAsTheClientDoes(createUIMessageStreamResponse({ stream }));
    await context.settle();
    expect(saves).toEqual([2]);
    expect(chunks.find((chunk) => chunk.type === MARKER_PART_TYPE)).toBeUndefined();
    const chat = await loadChat(backend.open(), 'saved-in-onfinish');
    expect(chat.map((message) => message.id)).toEqual(['q1', finished[0]]);
    expect(chat[1]).toStrictEqual(await messageFromChunks(chunks, 'unused'));
    await validateUIMessages({ messages: chat, tools });
    context.close();
  });
});
