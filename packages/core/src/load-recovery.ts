import type { LiveSessions } from './live-sessions.js';
import type { LockRegistry } from './lock-registry.js';
import { needsRecovery, repairPendingTurn, retryPendingMarkers } from './recovery.js';
import type { CacheEntry, SessionCache } from './session-cache.js';
import { RevisionConflictError } from './storage-errors.js';
import type { StoreRuns } from './store-runs.js';
import type { StoreEvent } from './store-types.js';

/** What recovery on load needs from its store. */
export interface LoadRecoveryHost {
  readonly locks: LockRegistry;
  readonly cache: SessionCache;
  readonly liveSessions: LiveSessions;
  readonly runs: StoreRuns;
  emit(event: StoreEvent): void;
}

/**
 * F1–F3: a load repairs what a dead run left behind (a pending turn no run of this store
 * owns, a marker whose journal may have arrived since), lazily, when someone looks. Loads
 * of one session share a single repair and never wait for it.
 */
export class LoadRecovery {
  private readonly recoveriesInFlight = new Set<string>();

  constructor(private readonly host: LoadRecoveryHost) {}

  /** Whether a repair is in flight; the cache must not evict the session it writes. */
  isRecovering(id: string): boolean {
    return this.recoveriesInFlight.has(id);
  }

  async recoverIfNeeded(entry: CacheEntry): Promise<void> {
    const { locks, cache, liveSessions, runs } = this.host;
    const session = entry.session;
    const liveRunIds = new Set(runs.all().map((run) => run.runId));
    if (!needsRecovery(session, liveRunIds)) return;
    const id = session.id;
    // F3: the caller holds this session's lock, so a later load repairs it.
    if (locks.holds(id)) return;
    // F3: single flight; the others return without waiting for it.
    if (this.recoveriesInFlight.has(id)) return;
    this.recoveriesInFlight.add(id);
    try {
      await locks.withLock(id, async () => {
        const current = cache.peek(id) ?? entry;
        let changed = false;
        let repaired: string | null = null;
        const pending = current.session.pending;
        if (pending !== null && !runs.has(id)) {
          const outcome = await repairPendingTurn(current.session, runs.recoveryContext());
          if (outcome !== 'alive') {
            changed = true;
            repaired = pending.streamId;
            this.host.emit({ type: 'recovery', sessionId: id, runId: pending.streamId, outcome });
          }
        }
        const retried = await retryPendingMarkers(
          current.session,
          runs.recoveryContext(),
          repaired,
        );
        if (retried.changed) changed = true;
        // A marker removed because its journal completed is the only shrink recovery makes.
        if (changed) {
          try {
            await liveSessions.write(current, {
              fsync: true,
              touchUpdatedAt: false,
              allowShrink: retried.removedMarker,
            });
          } catch (error) {
            if (!RevisionConflictError.isInstance(error)) throw error;
            // F3: another instance changed the session first (most likely its own repair
            // of the same turn): this load returns what that instance stored, not the
            // stale session this repair started from, and the next save starts from it.
            this.host.emit({ type: 'conflict', sessionId: id });
            await liveSessions.replaceFromStorage(current);
          }
        }
      });
    } finally {
      this.recoveriesInFlight.delete(id);
    }
  }
}
