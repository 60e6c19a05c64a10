import type { StorageAdapter } from '../../adapter/adapter.js';
import { adapterCall } from '../../adapter/adapter-call.js';
import type { StoreEvent } from '../../store-types.js';
import type { SessionSummary } from '../../validation/schemas.js';

/**
 * B7: index entries whose write failed after their document had landed. The save itself
 * succeeded (the document is stored, durably when asked), so it resolves, and the missing
 * entry is reported as a `warning` event and written again before the next listing, or by
 * the session's next save, whichever comes first. Without this, a transient error on the
 * index hid a stored session from `list()` until its next save.
 */
export class IndexRepairs {
  private readonly due = new Map<string, SessionSummary>();

  constructor(
    private readonly adapter: StorageAdapter,
    private readonly emit: (event: StoreEvent) => void,
  ) {}

  /** The entry of a stored write could not be indexed. */
  failed(summary: SessionSummary, error: unknown): void {
    this.due.set(summary.id, summary);
    const reason = error instanceof Error ? error.message : String(error);
    this.emit({
      type: 'warning',
      sessionId: summary.id,
      field: 'index',
      message: `the session was stored, but its index entry was not (${reason}); it is written again before the next list()`,
    });
  }

  /** The session's entry was written (or the session is gone): nothing left to repair. */
  forget(id: string): void {
    this.due.delete(id);
  }

  /**
   * Writes the entries still due, before a listing. A session deleted meanwhile (here or by
   * another instance) is not listed again; an entry that fails again stays due, and the
   * listing goes on without it rather than failing for every other session.
   */
  async catchUp(underLock: (id: string, fn: () => Promise<void>) => Promise<void>): Promise<void> {
    for (const id of [...this.due.keys()]) {
      // Under the session's lock, so a save of the session cannot land a newer entry
      // between the check and the write (the older one would then replace it).
      await underLock(id, () => this.repair(id));
    }
  }

  private async repair(id: string): Promise<void> {
    const { adapter } = this;
    const summary = this.due.get(id);
    if (summary === undefined) return;
    try {
      const stored = await adapterCall(adapter.name, 'check a session', () =>
        adapter.hasDocument('sessions', id),
      );
      if (stored) {
        await adapterCall(adapter.name, 'update the session index', () =>
          adapter.putIndexEntry(summary, { durable: false }),
        );
      }
      this.due.delete(id);
    } catch (error) {
      this.failed(summary, error);
    }
  }
}
