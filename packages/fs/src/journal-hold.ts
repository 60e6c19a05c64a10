import { type AdapterContext, makeDirectory } from './context.js';
import type { DeadLogWatch } from './dead-log-watch.js';
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
 * Takes the journal's lock as a lease and opens the journal at the tail this process knows
 * (re-read when the file says another process changed it).
 */
export async function takeHold(
  context: AdapterContext,
  paths: JournalPaths,
  knownTail: KnownTail | null,
  deadLogs: DeadLogWatch,
): Promise<HeldJournal> {
  const { locks, fileSystem } = context;
  // Before taking the journal over: a process that died may hold its latest appends in its
  // log only (replaying takes the journal's lock, so not while this writer holds it).
  await deadLogs.catchUp();
  const lease = await locks.lease(paths.lock, () => makeDirectory(fileSystem, paths.directory));
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
