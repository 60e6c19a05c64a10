import { BackendError } from '@keepsake/core';
import { type AdapterContext, makeDirectory } from './context.js';
import type { DeadLogWatch } from './dead-log-watch.js';
import { ADAPTER_NAME } from './errors.js';
import type { Lease } from './file-lock.js';
import type { FileHandle } from './file-system.js';
import { type KnownTail, openJournalTail } from './journal-tail.js';
import type { JournalPaths } from './layout.js';
import type { UnappliedFrames } from './unapplied-frames.js';

/**
 * How long an idle writer keeps its journal's lock: longer than the gaps between a model's
 * tokens (10–100 ms), so a stream does not take and drop the lock around every event (with
 * 20 ms, 100 streams at one token per 25 ms spent about 3× the CPU per append and waited
 * about 10× longer for each), and no longer than another writer may wait for a busy one
 * (WAIT_CHECK_MS): meanwhile an idle writer looks for wait marks as a busy one does.
 */
export const IDLE_MS = 250;
/** How often a busy writer looks for a wait mark: the longest another writer waits. */
const WAIT_CHECK_MS = 250;
/** A writer lets go at least this often, so its lock never looks stale to another host. */
export const MAX_HOLD_MS = 5_000;

/** A journal a writer holds: its lock leased and the file open between batches. */
export interface HeldJournal {
  readonly lease: Lease;
  /** Open on the journal; null until the first append creates the file. */
  handle: FileHandle | null;
  tail: KnownTail;
  readonly since: number;
  checkedAt: number;
  /** When the last batch was written: the idle timer lets go IDLE_MS after it. */
  lastUsed: number;
  /** Frames durable in the group-commit log, not yet written to the file. */
  unapplied: UnappliedFrames | null;
}

/** The lock was held MAX_HOLD_MS, or nobody looked for a wait mark for WAIT_CHECK_MS. */
export function lockCheckDue(held: HeldJournal, now: number): boolean {
  return now - held.since > MAX_HOLD_MS || now - held.checkedAt > WAIT_CHECK_MS;
}

/**
 * Milliseconds until an idle writer's timer should next act: when IDLE_MS have passed since
 * the last append, or a look for a wait mark falls due (lockCheckDue), whichever is first.
 */
export function idleTimerDelay(held: HeldJournal, now: number): number {
  const untilIdle = IDLE_MS - (now - held.lastUsed);
  const untilMaxHold = MAX_HOLD_MS - (now - held.since);
  // Past MAX_HOLD_MS the writer is already due to let go; if letting go failed (it keeps the
  // lock while its frames cannot be written), the retry waits its turn like any look, never
  // at once in a loop.
  const untilWaitCheck = WAIT_CHECK_MS - (now - held.checkedAt);
  const untilLook = untilMaxHold > 0 ? Math.min(untilWaitCheck, untilMaxHold) : untilWaitCheck;
  // One past the look's boundary: lockCheckDue counts a look due only beyond it.
  return Math.max(0, Math.min(untilIdle, untilLook + 1));
}

/**
 * How many times a takeover lets go of the journal's lock to replay dead processes' logs
 * before it gives up: each round follows a process that died since the round before.
 */
const TAKEOVER_ROUNDS = 4;

/**
 * Takes the journal's lock as a lease and opens the journal at the tail this process knows
 * (re-read when the file says another process changed it).
 *
 * E2/F1: a writer that died holding the lock may have acknowledged appends that are only in
 * its group-commit log. Looking for dead processes' logs BEFORE waiting for the lock is not
 * enough: the holder may die while this writer waits, and taking the lock then breaks the
 * dead holder's stale lock. So the look comes AFTER the lock is taken, when no live writer
 * can add to the journal: no dead process's log that a replay has not looked at, and the
 * file holds every acknowledged append. Otherwise the lock is let go (a replay takes each
 * journal's lock), the logs replayed, and the lock taken again. On the fast path (no process
 * died) the look is one `readdir` of `wal/`, synchronous on a local disk: a cached directory,
 * cheaper than the thread-pool round trip of an asynchronous one, and the only cost added to
 * a takeover (the look before waiting, which it replaces, cost the same).
 */
export async function takeHold(
  context: AdapterContext,
  paths: JournalPaths,
  knownTail: KnownTail | null,
  deadLogs: DeadLogWatch,
): Promise<HeldJournal> {
  const { locks, fileSystem } = context;
  let lease: Lease;
  for (let round = 1; ; round++) {
    lease = await locks.lease(paths.lock, () => makeDirectory(fileSystem, paths.directory));
    let unreplayed: string[];
    try {
      unreplayed = await deadLogs.unreplayed();
    } catch (error) {
      await lease.release().catch(() => undefined);
      throw error;
    }
    if (unreplayed.length === 0) break;
    await lease.release();
    if (round === TAKEOVER_ROUNDS) {
      throw new BackendError(
        ADAPTER_NAME,
        `take over journal ${paths.file}: processes kept dying holding group-commit logs (${unreplayed.join(', ')})`,
        { isRetryable: true },
      );
    }
    // Replays under each journal's lock (this one's included); a failure throws, typed.
    await deadLogs.replayFromNow(unreplayed);
  }
  try {
    const opened = await openJournalTail(
      fileSystem,
      paths.file,
      knownTail,
      context.segments.onLocalDisk,
    );
    const now = Date.now();
    return {
      lease,
      handle: opened.handle,
      tail: opened.tail,
      since: now,
      checkedAt: now,
      lastUsed: now,
      unapplied: null,
    };
  } catch (error) {
    await lease.release().catch(() => undefined);
    throw error;
  }
}
