import type { FollowRunItem } from '@keepsake/core';
import type { UIMessageChunk } from 'ai';
import { chunkOfRecord, isOutputRecord } from './chunk-records.js';
import { type KeepsakeMarkerPart, markerPartForEnding, markerPartOf } from './marker-part.js';
import { OpenParts } from './message-from-chunks.js';

export interface ReplayOptions {
  /** The answer's message id when the journal has no `start` chunk (the run died first). */
  fallbackMessageId: string;
  /** Stops the tail at once when the reader goes away (it may be waiting for a record). */
  abort(): void;
}

/**
 * A run's journal as the AI SDK's UI message stream: every chunk the run journaled, in order,
 * from the first (`useChat` treats a resumed stream as a full replay and rebuilds the answer
 * from its `start` chunk), then an ending the AI SDK understands. A completed run ends with
 * its `finish`. A run that was stopped, failed or whose server died ends with the parts it
 * left open closed, a `data-keepsake-marker` part saying what happened, and `finish`, so the
 * page shows the partial answer and the marker instead of waiting for a stream that will
 * never go on.
 */
export function replayStream(
  items: AsyncGenerator<FollowRunItem>,
  options: ReplayOptions,
): ReadableStream<UIMessageChunk> {
  const open = new OpenParts();
  let hadOutput = false;
  let errorMessage: string | null = null;
  let ended = false;

  const chunksOf = (item: FollowRunItem): UIMessageChunk[] => {
    if (item.kind === 'record') {
      const { record } = item;
      if (isOutputRecord(record)) hadOutput = true;
      if (record.type === 'error' && typeof record.data.message === 'string') {
        errorMessage = record.data.message;
      }
      const chunk = chunkOfRecord(record);
      if (chunk === null) return [];
      open.observe(chunk);
      return [chunk];
    }
    // E2, E3: core reads past damaged records; the answer goes on after them.
    if (item.kind === 'skipped') return [];
    ended = true;
    const { ending } = item;
    if (ending.reason === 'deleted') return finishing([]);
    const marker: KeepsakeMarkerPart | null =
      ending.markerMessage !== null
        ? markerPartOf(ending.markerMessage.marker, textOf(ending.markerMessage.content))
        : markerPartForEnding(ending.state, { hadOutput, errorMessage });
    if (marker === null) return finishing([]);
    return finishing([...open.closingChunks(), marker as UIMessageChunk]);
  };

  const finishing = (chunks: UIMessageChunk[]): UIMessageChunk[] => {
    const start: UIMessageChunk[] = open.started
      ? []
      : [{ type: 'start', messageId: options.fallbackMessageId }];
    const finish: UIMessageChunk[] =
      open.finished && chunks.length === 0 ? [] : [{ type: 'finish' }];
    return [...start, ...chunks, ...finish];
  };

  return new ReadableStream<UIMessageChunk>(
    {
      async pull(controller) {
        // Pull until something is enqueued: records this package did not write carry no chunk.
        for (;;) {
          const next = await items.next();
          if (next.done) {
            controller.close();
            return;
          }
          const chunks = chunksOf(next.value);
          for (const chunk of chunks) controller.enqueue(chunk);
          if (ended) {
            controller.close();
            // Runs the tail's cleanup (its watch, the context's list of open readers).
            await items.return(undefined);
            return;
          }
          if (chunks.length > 0) return;
        }
      },
      async cancel() {
        options.abort();
        await items.return(undefined);
      },
    },
    { highWaterMark: 0 },
  );
}

function textOf(content: string | Array<{ type: string; text?: unknown }>): string {
  if (typeof content === 'string') return content;
  return content
    .map((part) => (part.type === 'text' && typeof part.text === 'string' ? part.text : ''))
    .join('');
}
