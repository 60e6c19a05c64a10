import type { UIMessage, UIMessageChunk } from 'ai';
import { z } from 'zod';
import { keepsakeDataSchemas } from '../../src/index.js';

/** `validateUIMessages` data schemas for the scripted answers: their weather part and Keepsake's marker. */
export const dataSchemas = {
  ...keepsakeDataSchemas,
  weather: z.object({ city: z.string(), celsius: z.number() }),
};

/** A user message as `useChat` sends it. */
export function userMessage(id: string, text: string): UIMessage {
  return { id, role: 'user', parts: [{ type: 'text', text }] };
}

/** An answer's chunks: reasoning, a tool call and its result, a source, a data part, text words. */
export function scriptedAnswer(words: readonly string[]): UIMessageChunk[] {
  return [
    { type: 'start', messageMetadata: { model: 'scripted' } },
    { type: 'start-step' },
    { type: 'reasoning-start', id: 'r1' },
    { type: 'reasoning-delta', id: 'r1', delta: 'Thinking about it.' },
    { type: 'reasoning-end', id: 'r1' },
    { type: 'tool-input-start', toolCallId: 'call-1', toolName: 'search_notes' },
    { type: 'tool-input-delta', toolCallId: 'call-1', inputTextDelta: '{"query":"keepsake"}' },
    {
      type: 'tool-input-available',
      toolCallId: 'call-1',
      toolName: 'search_notes',
      input: { query: 'keepsake' },
    },
    { type: 'tool-output-available', toolCallId: 'call-1', output: { hits: 2 } },
    { type: 'source-url', sourceId: 'src-1', url: 'https://example.com/notes', title: 'Notes' },
    { type: 'data-weather', id: 'w1', data: { city: 'Lisbon', celsius: 21 } },
    { type: 'finish-step' },
    { type: 'start-step' },
    { type: 'text-start', id: 't1' },
    ...words.map((word): UIMessageChunk => ({ type: 'text-delta', id: 't1', delta: word })),
    { type: 'text-end', id: 't1' },
    { type: 'finish-step' },
    { type: 'finish', finishReason: 'stop', messageMetadata: { tokens: words.length } },
  ];
}

/** The words of an answer of `count` words, each with its trailing space. */
export function answerWords(count: number, prefix = 'word'): string[] {
  return Array.from({ length: count }, (_, index) => `${prefix}${index} `);
}

/** A stream of `chunks` that hands out the next one only when asked (no read-ahead). */
export function chunkStream(
  chunks: readonly UIMessageChunk[],
  options: { delayMs?: number; signal?: AbortSignal } = {},
): ReadableStream<UIMessageChunk> {
  let index = 0;
  return new ReadableStream<UIMessageChunk>(
    {
      async pull(controller) {
        if (options.delayMs !== undefined && options.delayMs > 0) {
          await new Promise((resolve) => setTimeout(resolve, options.delayMs));
        }
        if (options.signal?.aborted === true || index >= chunks.length) {
          controller.close();
          return;
        }
        controller.enqueue(chunks[index++]!);
      },
    },
    { highWaterMark: 0 },
  );
}

/**
 * A stream whose chunks the test releases one at a time (`release(n)`), for stopping and
 * reconnecting at an exact point. `pulled` counts the chunks the producer asked for.
 */
export function gatedStream(chunks: readonly UIMessageChunk[]) {
  let index = 0;
  let allowed = 0;
  let wake: (() => void) | null = null;
  let closed = false;
  const stream = new ReadableStream<UIMessageChunk>(
    {
      async pull(controller) {
        while (index >= allowed && index < chunks.length && !closed) {
          await new Promise<void>((resolve) => {
            wake = resolve;
          });
        }
        if (closed || index >= chunks.length) {
          controller.close();
          return;
        }
        controller.enqueue(chunks[index++]!);
      },
      cancel() {
        closed = true;
        wake?.();
      },
    },
    { highWaterMark: 0 },
  );
  return {
    stream,
    release(count: number) {
      allowed = Math.min(chunks.length, allowed + count);
      wake?.();
    },
    releaseAll() {
      allowed = chunks.length;
      wake?.();
    },
    get cancelled() {
      return closed;
    },
    get handedOut() {
      return index;
    },
  };
}

/** Reads a chunk stream to its end. */
export async function readAll<T>(stream: ReadableStream<T>): Promise<T[]> {
  const chunks: T[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

/** Reads chunks until `until` holds for one (included), then stops reading (cancels). */
export async function readUntil<T>(
  stream: ReadableStream<T>,
  until: (chunk: T, seen: readonly T[]) => boolean,
): Promise<T[]> {
  const chunks: T[] = [];
  const reader = stream.getReader();
  try {
    for (;;) {
      const next = await reader.read();
      if (next.done) return chunks;
      chunks.push(next.value);
      if (until(next.value, chunks)) return chunks;
    }
  } finally {
    await reader.cancel();
  }
}
