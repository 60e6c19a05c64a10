import { readUIMessageStream, type UIMessage, type UIMessageChunk } from 'ai';

/**
 * Which text and reasoning parts a stream opened and has not ended yet. A stream cut short
 * (stopped, or its server died) leaves them `streaming`; closing them with their `-end`
 * chunks gives the answer's parts their final `done` state, live and after a reload alike.
 */
export class OpenParts {
  private readonly text = new Set<string>();
  private readonly reasoning = new Set<string>();
  started = false;
  finished = false;
  messageId: string | null = null;

  observe(chunk: UIMessageChunk): void {
    switch (chunk.type) {
      case 'start':
        this.started = true;
        this.messageId ??= chunk.messageId ?? null;
        break;
      case 'text-start':
        this.text.add(chunk.id);
        break;
      case 'text-end':
        this.text.delete(chunk.id);
        break;
      case 'reasoning-start':
        this.reasoning.add(chunk.id);
        break;
      case 'reasoning-end':
        this.reasoning.delete(chunk.id);
        break;
      case 'finish':
        this.finished = true;
        break;
      default:
        break;
    }
  }

  /** The chunks that end every part still open, in the order they were opened. */
  closingChunks(): UIMessageChunk[] {
    return [
      ...[...this.reasoning].map((id): UIMessageChunk => ({ type: 'reasoning-end', id })),
      ...[...this.text].map((id): UIMessageChunk => ({ type: 'text-end', id })),
    ];
  }
}

/**
 * The assistant message a sequence of chunks builds, by the AI SDK's own reducer
 * (`readUIMessageStream`, the one `useChat` runs), so what is stored is what the page showed.
 */
export async function messageFromChunks(
  chunks: readonly UIMessageChunk[],
  fallbackId: string,
): Promise<UIMessage> {
  // The answer's id: the first `start` chunk's, else the fallback (the reducer would invent one).
  const firstStart = chunks.findIndex((chunk) => chunk.type === 'start');
  const named =
    firstStart >= 0 ? (chunks[firstStart] as { messageId?: string }).messageId : undefined;
  const messageId = named ?? fallbackId;
  const normalized: UIMessageChunk[] =
    firstStart < 0
      ? [{ type: 'start', messageId }, ...chunks]
      : chunks.map((chunk, index) =>
          index === firstStart ? ({ ...chunk, messageId } as UIMessageChunk) : chunk,
        );
  // The reducer hands out a snapshot only when a chunk changes what a page shows; a step
  // boundary or a finish at the end does not. A `start` with the same id changes nothing
  // and makes it hand out the final state.
  normalized.push({ type: 'start', messageId });
  const stream = new ReadableStream<UIMessageChunk>({
    start(controller) {
      for (const chunk of normalized) controller.enqueue(chunk);
      controller.close();
    },
  });
  let last: UIMessage | undefined;
  // An `error` chunk is part of the answer as streamed (the page showed it); it is not a
  // reason to stop building the message.
  for await (const message of readUIMessageStream({ stream, onError: () => {} })) {
    last = message;
  }
  // As JSON, the way it is stored and sent: no `undefined` fields.
  return JSON.parse(JSON.stringify(last)) as UIMessage;
}
