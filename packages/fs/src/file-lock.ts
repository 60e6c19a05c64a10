import { isNotFound, toBackendError } from './errors.js';
import type { FileSystem } from './file-system.js';
import { LockAcquirer, type LockOptions, WAIT_SUFFIX } from './lock-acquisition.js';
import type { LockOwner } from './lock-owner.js';
import { serializeInProcess } from './process-queue.js';

/**
 * Defined in lock-owner.ts; group-commit-log.ts, dead-log-watch.ts and log-file.ts import them
 * from here.
 */
export { holdToken, isOwnerAlive, releaseToken, thisHost } from './lock-owner.js';

export interface Lease {
  /** Whether another writer is waiting for the lock (one lstat). */
  wanted(): Promise<boolean>;
  release(): Promise<void>;
}
/** A held lock a writer keeps between writes (see `withLeasedLock`). */
export interface HeldLock {
  /** What the writer knows of the locked files; valid only while the lock stays held. */
  cache: unknown;
}

interface LeaseState extends HeldLock {
  readonly owner: LockOwner;
  readonly since: number;
  checkedAt: number;
  busy: boolean;
  timer: ReturnType<typeof setTimeout> | null;
}

/** How long an idle leased lock is kept. */
const LEASE_IDLE_MS = 20;
/** How often a busy leased lock looks for a wait mark: about the longest another writer waits. */
const LEASE_WAIT_CHECK_MS = 50;
/** A leased lock is let go at least this often (and every `lockStaleMs / 4`), so it never looks stale to another host. */
const LEASE_MAX_HOLD_MS = 5_000;

/**
 * B4: cross-process locks as lock files created atomically.
 *
 * A lock is a symbolic link whose target is its owner `{ pid, host, token, createdAt }`, the
 * way Emacs locks files: creating it is one atomic call that fails with EEXIST when the lock
 * is held (atomic on NFS too), and the owner is never half-written, also after a crash or a
 * power loss. Where symbolic links cannot be created (Windows without the privilege), the
 * lock is a regular file created with O_EXCL (`wx`) holding the same JSON.
 *
 * A lock is stale, and is broken, when:
 * - it was written on this host by a process that no longer exists (checked with signal 0),
 *   or by this very process under a token it no longer holds (a store that crashed in a
 *   test, or a lock left from before a simulated power loss);
 * - it was written on this host in an earlier boot (boot id, else boot time: see boot.ts);
 * - it was written on another host and is older than `lockStaleMs`;
 * - it cannot be read and is older than two seconds (a lock file whose writer died between
 *   creating and writing it).
 * A lock held by a live process on this host is never broken; a writer waits for it, up to
 * `lockTimeoutMs`. Breaking renames the stale lock aside, checks that what moved is the lock
 * judged stale, and puts it back otherwise.
 *
 * Inside one process, writers of one lock queue on a promise chain first, so a process never
 * polls against itself.
 */
export class FileLocks {
  private readonly fileSystem: FileSystem;
  private readonly options: LockOptions;
  private readonly acquirer: LockAcquirer;
  /** Leased locks this instance holds between writes, by lock path. */
  private readonly leases = new Map<string, LeaseState>();
  /** Releases of leased locks in flight: a new acquire of the path waits for them. */
  private readonly releasing = new Map<string, Promise<void>>();

  /** Called before a leased lock is let go: what its writer kept open under it is closed. */
  private readonly beforeLetGo: (lockPath: string) => Promise<void>;
  /** Whether the locks lie on a disk of this machine (known once the adapter opened). */
  private readonly onLocalDisk: () => boolean;

  constructor(
    fileSystem: FileSystem,
    options: LockOptions,
    beforeLetGo: (lockPath: string) => Promise<void> = async () => undefined,
    onLocalDisk: () => boolean = () => false,
  ) {
    this.fileSystem = fileSystem;
    this.options = options;
    this.beforeLetGo = beforeLetGo;
    this.onLocalDisk = onLocalDisk;
    this.acquirer = new LockAcquirer(fileSystem, options);
  }

  /**
   * Runs `action` holding the lock file `lockPath`. `createDirectory` is called when the
   * lock's directory does not exist yet. With `signal`, a writer that finds the lock held
   * asks the holder of a lease to let go (see `lease`).
   */
  async withLock<T>(
    lockPath: string,
    createDirectory: () => Promise<void>,
    action: () => Promise<T>,
    signal = false,
  ): Promise<T> {
    return serializeInProcess(this.fileSystem, lockPath, async () => {
      await this.dropLease(lockPath);
      const owner = await this.acquirer.acquire(lockPath, createDirectory, signal);
      try {
        return await action();
      } finally {
        await this.acquirer.release(lockPath, owner);
      }
    });
  }

  /**
   * Like `withLock`, but the lock is kept after `action` (a lease), so a document written
   * again and again costs no lock file create and unlink per write (each unlink waits for the
   * filesystem's journal). `action` gets the held lock with a `cache` slot that survives only
   * while the lock stays held: what it knows of the locked files. The lock is let go after
   * LEASE_IDLE_MS without a write, when another writer leaves a wait mark (checked at most
   * every LEASE_WAIT_CHECK_MS), at least every LEASE_MAX_HOLD_MS, when `action` fails, and on
   * `dropAllLeases()`.
   */
  async withLeasedLock<T>(
    lockPath: string,
    createDirectory: () => Promise<void>,
    action: (held: HeldLock) => Promise<T>,
  ): Promise<T> {
    return serializeInProcess(this.fileSystem, lockPath, async () => {
      let lease = this.leases.get(lockPath);
      if (lease !== undefined) {
        if (lease.timer !== null) clearTimeout(lease.timer);
        lease.timer = null;
        const now = Date.now();
        // Well inside `lockStaleMs`, so another host never judges a busy lease stale.
        const maxHoldMs = Math.min(LEASE_MAX_HOLD_MS, this.options.staleMs / 4);
        let letGo = now - lease.since > maxHoldMs;
        if (!letGo && now - lease.checkedAt > LEASE_WAIT_CHECK_MS) {
          lease.checkedAt = now;
          // A look that fails counts as wanted: letting go is always safe, while a throw here
          // would leave the lease with no idle timer, its lock and open file kept for good.
          letGo = await this.isWanted(lockPath).catch(() => true);
        }
        if (letGo) {
          await this.dropLease(lockPath);
          lease = undefined;
        }
      }
      if (lease === undefined) {
        await this.releasing.get(lockPath)?.catch(() => undefined);
        const owner = await this.acquirer.acquire(lockPath, createDirectory, true);
        const now = Date.now();
        lease = { owner, cache: null, since: now, checkedAt: now, busy: false, timer: null };
        this.leases.set(lockPath, lease);
      }
      lease.busy = true;
      let failed = true;
      try {
        const result = await action(lease);
        failed = false;
        return result;
      } finally {
        lease.busy = false;
        if (failed) await this.dropLease(lockPath).catch(() => undefined);
        else this.armIdleTimer(lockPath, lease);
      }
    });
  }

  /** Lets go of a leased lock now (a writer that must leave no lock file behind). */
  async releaseLease(lockPath: string): Promise<void> {
    if (!this.leases.has(lockPath)) return;
    await serializeInProcess(this.fileSystem, lockPath, () => this.dropLease(lockPath));
  }

  /** Lets go of every leased lock (close). */
  async dropAllLeases(): Promise<void> {
    await Promise.all([...this.leases.keys()].map((lockPath) => this.releaseLease(lockPath)));
    await Promise.all(this.releasing.values());
  }

  private armIdleTimer(lockPath: string, lease: LeaseState): void {
    lease.timer = setTimeout(() => {
      lease.timer = null;
      // A write in progress re-arms the timer when it ends; a newer lease is not this one.
      if (lease.busy || this.leases.get(lockPath) !== lease) return;
      void this.dropLease(lockPath).catch(() => undefined);
    }, LEASE_IDLE_MS);
    lease.timer.unref?.();
  }

  /** Releases the leased lock of `lockPath`, if any; a later acquire waits for the unlink. */
  private async dropLease(lockPath: string): Promise<void> {
    const lease = this.leases.get(lockPath);
    if (lease !== undefined) {
      this.leases.delete(lockPath);
      if (lease.timer !== null) clearTimeout(lease.timer);
      lease.timer = null;
      lease.cache = null;
      const releasing = this.beforeLetGo(lockPath)
        .catch(() => undefined)
        .then(() => this.acquirer.release(lockPath, lease.owner))
        .finally(() => {
          if (this.releasing.get(lockPath) === releasing) this.releasing.delete(lockPath);
        });
      this.releasing.set(lockPath, releasing);
    }
    await this.releasing.get(lockPath);
  }

  private async isWanted(lockPath: string): Promise<boolean> {
    const mark = `${lockPath}${WAIT_SUFFIX}`;
    try {
      // On a local disk at once: one look at a cached directory entry, not a round trip
      // through libuv's thread pool (a held journal looks every 250 ms: at 100 streams,
      // 400 round trips a second).
      const lstatNow = this.onLocalDisk() ? this.fileSystem.lstatSync : undefined;
      if (lstatNow !== undefined) lstatNow.call(this.fileSystem, mark);
      else await this.fileSystem.lstat(mark);
      return true;
    } catch (error) {
      if (isNotFound(error)) return false;
      throw toBackendError(error, `check lock ${lockPath}`);
    }
  }

  /**
   * Takes the lock and keeps it until `release()`: a journal writer holds one while it
   * streams, so an append costs no lock file of its own. A writer that finds a leased lock
   * held leaves a `<lock>.wait` mark; the holder looks for it now and then (`wanted`) and
   * lets go, and the waiter removes the mark once it holds the lock.
   */
  async lease(lockPath: string, createDirectory: () => Promise<void>): Promise<Lease> {
    const owner = await this.acquirer.acquire(lockPath, createDirectory, true);
    let released = false;
    return {
      wanted: () => this.isWanted(lockPath),
      release: async () => {
        if (released) return;
        released = true;
        await this.acquirer.release(lockPath, owner);
      },
    };
  }
}
