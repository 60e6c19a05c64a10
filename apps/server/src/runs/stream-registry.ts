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
  /** Each open stream, with whether its run is streamed by another instance (metrics). */
  private readonly streams = new Map<AbortController, () => boolean>();

  get size(): number {
    return this.streams.size;
  }

  /** Open streams following a run another instance streams, as `isRemote` says now. */
  get remoteCount(): number {
    let count = 0;
    for (const isRemote of this.streams.values()) if (isRemote()) count++;
    return count;
  }

  open(isRemote: () => boolean = () => false): OpenStream {
    const controller = new AbortController();
    this.streams.set(controller, isRemote);
    return {
      signal: controller.signal,
      close: () => {
        controller.abort();
        this.streams.delete(controller);
      },
    };
  }

  closeAll(): void {
    for (const controller of this.streams.keys()) controller.abort();
    this.streams.clear();
  }
}
