import { simulateReadableStream, tool } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { z } from 'zod';

/** The stream a language model hands to streamText. */
type ModelStream = Awaited<ReturnType<MockLanguageModelV4['doStream']>>['stream'];

const usage = {
  inputTokens: { total: 12, noCache: 12, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 80, text: 80, reasoning: undefined },
};

const filler = (
  'Keepsake journals every chunk of this answer before your page sees it, so a reload, ' +
  'another server or a killed process never loses what was already said. '
).split(' ');

/** The answer's text for a question: deterministic, `words` words long, ending with a period. */
export function scriptedAnswerText(question: string, words: number): string {
  const opening = `You asked: “${question.trim()}”.`;
  const body = Array.from({ length: words }, (_, index) => filler[index % filler.length]!).join(
    ' ',
  );
  return `${opening} ${body.replace(/[,.]?$/, '')}.`.replace(/\s+/g, ' ');
}

/** The one tool the scripted model calls, executed on the server like any AI SDK tool. */
export const tools = {
  search_notes: tool({
    description: 'Search the notes',
    inputSchema: z.object({ query: z.string() }),
    execute: async ({ query }) => ({ query, hits: 3 }),
  }),
};

/**
 * An offline model: the AI SDK's own MockLanguageModelV4 (ai/test), scripted. Its first
 * step reasons and calls `search_notes`; after the tool ran, its second step cites a source
 * and answers word by word, one word every `delayMs`.
 */
export function scriptedModel(question: string, options: { delayMs: number; words: number }) {
  return new MockLanguageModelV4({
    provider: 'keepsake-example',
    modelId: 'scripted',
    doStream: async ({ prompt }) => {
      const afterTool = prompt.at(-1)?.role === 'tool';
      const chunks: unknown[] = afterTool
        ? [
            { type: 'stream-start', warnings: [] },
            {
              type: 'source',
              sourceType: 'url',
              id: 'notes',
              url: 'https://example.com/keepsake-notes',
              title: 'Keepsake notes',
            },
            { type: 'text-start', id: 'answer' },
            ...scriptedAnswerText(question, options.words)
              .split(/(?<= )/)
              .map((delta) => ({ type: 'text-delta', id: 'answer', delta })),
            { type: 'text-end', id: 'answer' },
            { type: 'finish', finishReason: { unified: 'stop', raw: undefined }, usage },
          ]
        : [
            { type: 'stream-start', warnings: [] },
            { type: 'reasoning-start', id: 'thinking' },
            { type: 'reasoning-delta', id: 'thinking', delta: 'Let me look in the notes first.' },
            { type: 'reasoning-end', id: 'thinking' },
            {
              type: 'tool-call',
              toolCallId: 'search-1',
              toolName: 'search_notes',
              input: JSON.stringify({ query: question.slice(0, 40) }),
            },
            { type: 'finish', finishReason: { unified: 'tool-calls', raw: undefined }, usage },
          ];
      return {
        stream: simulateReadableStream({
          chunks,
          initialDelayInMs: options.delayMs,
          chunkDelayInMs: options.delayMs,
        }) as ModelStream,
      };
    },
  });
}
