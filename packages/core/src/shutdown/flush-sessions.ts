import type { StorageAdapter } from '../adapter/adapter.js';
import { adapterCall, toKeepsakeError } from '../adapter/adapter-call.js';
import { RevisionConflictError } from '../errors/storage-errors.js';
import type { LockRegistry } from '../locks/lock-registry.js';
import type { CacheEntry } from '../sessions/session-cache.js';
import type { SessionPersistence } from '../sessions/session-persistence.js';
import type { FlushReport } from '../store-types.js';

export interface FlushContext {
  entries: CacheEntry[];
  persistence: SessionPersistence;
  locks: LockRegistry;
  adapter: StorageAdapter;
  concurrency: number;
}

/**
 * C1: re-persists every cached session with fsync, best effort, `concurrency` at a time.
 * A session without unsaved edits is rewritten at its stored revision, so flushing never
 * bumps a revision another instance holds; if that instance wrote a newer one meanwhile,
 * nothing of ours needs making durable and the session is not counted. One failure never
 * stops the others: it is reported with its typed error. Ends with `adapter.sync()`.
 */
export async function flushCachedSessions(context: FlushContext): Promise<FlushReport> {
  const { persistence, locks, adapter } = context;
  const report: FlushReport = { flushed: 0, failed: [] };
  const queue = [...context.entries];
  const worker = async () => {
    for (let entry = queue.shift(); entry !== undefined; entry = queue.shift()) {
      const current = entry;
      const id = current.session.id;
      const clean = !persistence.isDirty(current);
      try {
        await locks.withLockIfNotHeld(id, () =>
          persistence.write(current, {
            fsync: true,
            touchUpdatedAt: false,
            skipIndex: clean && !current.indexStale,
            rewriteRevision: clean,
          }),
        );
        report.flushed++;
      } catch (error) {
        if (clean && RevisionConflictError.isInstance(error)) continue;
        report.failed.push({
          sessionId: id,
          error: toKeepsakeError(error, adapter.name, 'flush a session'),
        });
      }
    }
  };
  await Promise.all(Array.from({ length: context.concurrency }, worker));
  await adapterCall(adapter.name, 'sync', () => adapter.sync());
  return report;
}
