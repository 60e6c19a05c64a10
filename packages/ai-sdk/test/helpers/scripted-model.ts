import { simulateReadableStream } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';

/** The stream a language model hands to streamText (LanguageModelV4StreamPart items). */
type ModelStream = Awaited<ReturnType<MockLanguageModelV4['doStream']>>['stream'];

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 20, text: 20, reasoning: undefined },
};

export interface ScriptedModelOptions {
  /** Wall time between chunks. @default null (no delay) */
  chunkDelayInMs?: number | null;
  /**
   * Stop after this many words of the answer and wait until the call is aborted (a stop),
   * as a model that is still writing does: a test that stops the answer then never races
   * its end, however slow the machine. @default undefined (the whole answer)
   */
  holdAfterWords?: number;
}

/**
 * The AI SDK's own mock model (ai/test), scripted: step one reasons and calls
 * `search_notes`; step two (after the tool ran) cites a source and answers word by word.
 */
export function scriptedModel(words: readonly string[], options: ScriptedModelOptions = {}) {
  let step = 0;
  return new MockLanguageModelV4({
    doStream: async ({ abortSignal }) => {
      step++;
      if (step === 1) {
        const chunks: unknown[] = [
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
        ];
        return { stream: simulate(chunks, options.chunkDelayInMs ?? null) };
      }
      const opening = [
        { type: 'stream-start', warnings: [] },
        { type: 'source', sourceType: 'url', id: 's1', url: 'https://example.com/notes' },
        { type: 'text-start', id: 't1' },
      ];
      const deltas = (list: readonly string[]) =>
        list.map((delta) => ({ type: 'text-delta', id: 't1', delta }));
      const closing = [
        { type: 'text-end', id: 't1' },
        { type: 'finish', finishReason: { unified: 'stop', raw: undefined }, usage },
      ];
      if (options.holdAfterWords === undefined) {
        const chunks = [...opening, ...deltas(words), ...closing];
        return { stream: simulate(chunks, options.chunkDelayInMs ?? null) };
      }
      const before = [...opening, ...deltas(words.slice(0, options.holdAfterWords))];
      return { stream: heldStream(before, abortSignal) };
    },
  });
}

function simulate(chunks: unknown[], chunkDelayInMs: number | null): ModelStream {
  return simulateReadableStream({ chunks, chunkDelayInMs }) as ModelStream;
}

/** `chunks`, then nothing more until `signal` aborts or the reader cancels. */
function heldStream(chunks: readonly unknown[], signal: AbortSignal | undefined): ModelStream {
  let index = 0;
  let cancelled = false;
  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  if (signal?.aborted === true) release();
  else signal?.addEventListener('abort', () => release(), { once: true });
  return new ReadableStream<unknown>({
    async pull(controller) {
      if (index < chunks.length) {
        controller.enqueue(chunks[index++]);
        return;
      }
      await released;
      // A cancelled stream is closed already.
      if (!cancelled) controller.close();
    },
    cancel() {
      cancelled = true;
      release();
    },
  }) as ModelStream;
}
