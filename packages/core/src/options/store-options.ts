import type { StorageAdapter } from '../adapter/adapter.js';
import type { Clock } from '../time/clock.js';

/** E2: when journal appends are made durable. */
export type JournalDurabilityPolicy = 'terminal' | 'group' | 'each';

export interface StoreLimits {
  /** A3: largest serialized session document, in bytes. @default 16 MiB */
  maxDocumentBytes: number;
  /** A3: most messages in one session. @default 100_000 */
  maxMessages: number;
  /** A3: largest serialized journal event, in bytes. @default 1 MiB */
  maxJournalEventBytes: number;
}

export interface SessionStoreOptions {
  adapter: StorageAdapter;
  /** Injectable time source; tests pass a ManualClock so time-based clauses never sleep. @default systemClock */
  clock?: Clock;
  limits?: Partial<StoreLimits>;
  cache?: {
    /** C4: sessions kept in memory; sessions with live runs or unsaved changes are never evicted. @default 500 */
    maxSessions?: number;
  };
  journal?: {
    /** E2: `terminal` fsyncs terminal events only, `group` shares fsyncs, `each` fsyncs every event. @default 'group' */
    durability?: JournalDurabilityPolicy;
  };
  checkpoint?: {
    /** E4: how often a running session is checked for new activity. @default 5000 */
    intervalMs?: number;
    /** E4: a checkpoint is written at least this often while a run is live, to refresh its heartbeat. @default 15000 */
    idleRefreshMs?: number;
  };
  recovery?: {
    /** F1: a pending turn older than this with no live run and no journal activity is repaired. @default 30000 */
    graceMs?: number;
    /** F2: sealed-but-empty journal reads before the marker is demoted. @default 12 */
    maxAttempts?: number;
    /** F2: age after which a pending-retry marker is demoted whatever happened. @default 86_400_000 */
    giveUpMs?: number;
  };
  lifecycle?: {
    /** C2/C5/G6: how long close() waits for memory commits before abandoning them. @default 10000 */
    drainDeadlineMs?: number;
  };
  runs?: {
    /**
     * E6: how long a cancel or failure waits for the run's appends in flight to settle.
     * Past it the run is fenced out all the same (its stuck appends can no longer change
     * the transcript) and the session is free for a new run. @default 10000
     */
    cancelDeadlineMs?: number;
    /**
     * H4: how often (real time) `followRun` reads the journal of a run this store does not
     * stream: how soon a follower sees another instance's records (one journal read per
     * follower per interval; a run streamed here wakes its followers at once, with no read).
     * @default 250
     */
    followPollMs?: number;
    /**
     * E9: the same, where the adapter pushes appends made elsewhere (`watchLog`): a push
     * wakes the follower at once, and this poll only catches a push that never came and
     * looks at the run's owner and grace. @default 1000
     */
    followPushedPollMs?: number;
  };
  deltas?: {
    /** Fewest appended-message deltas before a save may rewrite the document in full. @default 64 */
    compactAfter?: number;
    /**
     * A save rewrites the document in full only once the deltas since the last full write
     * weigh at least this many times that write, so the rewrite's cost spread over the
     * deltas stays proportional to what they added (O(1) per appended byte, whatever the
     * history). 0 compacts on `compactAfter` alone. @default 1
     */
    compactRatio?: number;
  };
  /** B2/C1: concurrency of flushAll. @default 8 */
  flushConcurrency?: number;
  /**
   * Inspect a store without changing it. Loads and listings run as always (a load repairs a
   * crashed turn, F1, and quarantines what does not parse, A2; a listing rebuilds a missing
   * index, B7) and return the repaired view, but those repairs are held in memory and never
   * written (see `readOnlyOverlay`); `create`, `save`, `delete`, `rename`, `beginRun`,
   * `cancelRun`, `closeAnsweredRun` and the lifecycle's `markTurnCompleted` and `commit`
   * throw `ReadOnlyError`. Give it an adapter opened read-only as well
   * (`fsAdapter({ directory, readOnly: true })`), whose own open writes nothing.
   * @default false
   */
  readOnly?: boolean;
}
