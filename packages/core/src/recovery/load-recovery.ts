import { RevisionConflictError } from '../errors/storage-errors.js';
import type { LockRegistry } from '../locks/lock-registry.js';
import type { StoreRuns } from '../runs/store-runs.js';
import type { LiveSessions } from '../sessions/live-sessions.js';
import type { CacheEntry, SessionCache } from '../sessions/session-cache.js';
import type { StoreEvent } from '../store-types.js';
import { needsRecovery, repairPendingTurn, retryPendingMarkers } from './recovery.js';

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
    const stalled = runs.get(session.id)?.stalled === true;
    if (!stalled && !needsRecovery(session, runs.liveRunIds())) return;
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
        const local = runs.get(id);
        if (pending !== null && (local === undefined || local.stalled)) {
          const outcome = await repairPendingTurn(current.session, runs.recoveryContext());
          if (outcome !== 'alive') {
            changed = true;
            repaired = pending.streamId;
            this.host.emit({ type: 'recovery', sessionId: id, runId: pending.streamId, outcome });
          }
        }
        // E6, F1: a stalled run whose turn is no longer pending (repaired just now, or
        // answered before its ending failed) is over here: the session is free again.
        if (local?.stalled === true && current.session.pending?.streamId !== local.runId) {
          local.fenceStalled();
        }
        const retried = await retryPendingMarkers(
          current.session,
          runs.recoveryContext(),
          repaired,
        );
        if (retried.changed) changed = true;
        // A marker removed because its journal completed is the only shrink recovery makes.
        //
        // C3, F1: a repair of a pending turn alone is written without a flush of its own.
        // It need not be durable, because it is re-derivable from what is: its inputs (the
        // stored session with its pending turn, and the journal) were there before this
        // load and are left as they were, so if a power loss takes the repair, the next
        // load makes it again from them: the same turn, the same output (as much of it as
        // the journal made durable, E2), the same marker but for its id and time. (The crash
        // record is not flushed either, see `appendCrashRecord`; should it survive the
        // repair, the next repair is the one a crash between the two has always led to:
        // a sealed journal, so a pending-retry marker starts at one attempt.) And whatever
        // builds on the repair durably makes it durable first: a durable save of the
        // session, here or in another process, flushes the session's files, which hold the
        // repair's bytes (fs: the delta file's fdatasync, the base's fsync when this process
        // has not made it durable), and `flushAll()`/`close()` re-persist it with fsync (C1).
        // A marker's update (F2) is flushed as before: the attempts it counts are loads
        // that happened, which no later load can re-derive.
        if (changed) {
          try {
            await liveSessions.write(current, {
              fsync: retried.changed,
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
