import type { FastifyBaseLogger } from 'fastify';
import type { Namespace } from '../namespaces/namespace-registry.js';
import type { DemoMemoryProvider } from './demo-memory-provider.js';

/**
 * Session boundaries for the memory lifecycle (G). Starting a new session commits the
 * previous session's completed turns; the commit runs in the background, outside every
 * lock (D3), and `close()` drains whatever is still uncommitted at shutdown (C2, G6).
 */
export class MemoryBoundary {
  private readonly inFlight = new Set<Promise<void>>();

  constructor(
    private readonly provider: DemoMemoryProvider,
    private readonly logger: FastifyBaseLogger,
  ) {}

  /** Starts the commit of `sessionId`'s memory; returns the promise for callers that wait. */
  commitInBackground(namespace: Namespace, sessionId: string): Promise<void> {
    const agent = this.provider.agentFor(namespace.name, namespace.store, sessionId);
    const commit = namespace.store.lifecycle
      .commit(sessionId, { agent })
      .then((committed) => {
        this.logger.debug({ sessionId, committed }, 'memory boundary commit');
      })
      .catch((error: unknown) => {
        // G4: the work stays uncommitted; the next boundary or the shutdown drain retries it.
        this.logger.warn({ err: error, sessionId }, 'memory commit failed; it stays uncommitted');
      })
      .finally(() => this.inFlight.delete(commit));
    this.inFlight.add(commit);
    return commit;
  }

  forget(namespace: Namespace, sessionId: string): void {
    namespace.store.lifecycle.unregisterAgent(sessionId);
    this.provider.forgetSession(namespace.name, sessionId);
  }

  /** Waits for boundary commits already started (the store's drain covers the rest). */
  async settle(): Promise<void> {
    await Promise.all([...this.inFlight]);
  }
}
