/** One open SSE stream: its signal aborts when the client leaves or the server shuts down. */
export interface OpenStream {
  readonly signal: AbortSignal;
  close(): void;
}

/**
 * The SSE streams this process serves. Shutdown ends them all (clients reconnect elsewhere
 * with Last-Event-ID and lose nothing, because the journal, not the connection, holds the run).
 */
export class StreamRegistry {
  private readonly streams = new Set<AbortController>();

  get size(): number {
    return this.streams.size;
  }

  open(): OpenStream {
    const controller = new AbortController();
    this.streams.add(controller);
    return {
      signal: controller.signal,
      close: () => {
        controller.abort();
        this.streams.delete(controller);
      },
    };
  }

  closeAll(): void {
    for (const controller of this.streams) controller.abort();
    this.streams.clear();
  }
}
