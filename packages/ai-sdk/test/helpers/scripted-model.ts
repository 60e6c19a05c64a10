import { simulateReadableStream } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';

/** The stream a language model hands to streamText (LanguageModelV4StreamPart items). */
type ModelStream = Awaited<ReturnType<MockLanguageModelV4['doStream']>>['stream'];

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 20, text: 20, reasoning: undefined },
};

/**
 * The AI SDK's own mock model (ai/test), scripted: step one reasons and calls
 * `search_notes`; step two (after the tool ran) cites a source and answers word by word.
 */
export function scriptedModel(words: readonly string[], chunkDelayInMs: number | null = null) {
  let step = 0;
  return new MockLanguageModelV4({
    doStream: async () => {
      step++;
      const chunks: unknown[] =
        step === 1
          ? [
              { type: 'stream-start', warnings: [] },
              { type: 'reasoning-start', id: 'r1' },
              { type: 'reasoning-delta', id: 'r1', delta: 'Looking in the notes first.' },
              { type: 'reasoning-end', id: 'r1' },
              {
                type: 'tool-call',
                toolCallId: 'call-1',
                toolName: 'search_notes',
                input: JSON.stringify({ query: 'keepsake' }),
              },
              { type: 'finish', finishReason: { unified: 'tool-calls', raw: undefined }, usage },
            ]
          : [
              { type: 'stream-start', warnings: [] },
              { type: 'source', sourceType: 'url', id: 's1', url: 'https://example.com/notes' },
              { type: 'text-start', id: 't1' },
              ...words.map((delta) => ({ type: 'text-delta', id: 't1', delta })),
              { type: 'text-end', id: 't1' },
              { type: 'finish', finishReason: { unified: 'stop', raw: undefined }, usage },
            ];
      return { stream: simulateReadableStream({ chunks, chunkDelayInMs }) as ModelStream };
    },
  });
}
