import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { BackendError } from '@keepsake/core';
import { currentBootId, isFromEarlierBoot } from './boot.js';
import { ADAPTER_NAME, errorCode, isAlreadyExists, isNotFound, toBackendError } from './errors.js';
import { type FileSystem, writeAll } from './file-system.js';

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
export interface LockOptions {
  readonly staleMs: number;
  readonly timeoutMs: number;
}

interface LockOwner {
  pid: number;
  host: string;
  token: string;
  createdAt: number;
  /** The boot id of the machine when the lock was taken (null where there is none). */
  boot?: string | null;
}

const UNREADABLE_STALE_MS = 2_000;
/** Next to a leased lock: a writer is waiting for it. */
export const WAIT_SUFFIX = '.wait';

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

const heldTokens = new Set<string>();
const processQueues = new WeakMap<FileSystem, Map<string, Promise<void>>>();
export const thisHost = hostname();

export class FileLocks {
  private readonly fileSystem: FileSystem;
  private readonly options: LockOptions;
  /** Set once symlink() turned out unsupported here: locks are O_EXCL files from then on. */
  private useFiles = false;
  /** This machine's boot id, read once: it cannot change while this process lives. */
  private bootId: Promise<string | null> | null = null;
  /** Leased locks this instance holds between writes, by lock path. */
  private readonly leases = new Map<string, LeaseState>();
  /** Releases of leased locks in flight: a new acquire of the path waits for them. */
  private readonly releasing = new Map<string, Promise<void>>();

  constructor(fileSystem: FileSystem, options: LockOptions) {
    this.fileSystem = fileSystem;
    this.options = options;
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
    return this.serialize(lockPath, async () => {
      await this.dropLease(lockPath);
      const owner = await this.acquire(lockPath, createDirectory, signal);
      try {
        return await action();
      } finally {
        await this.release(lockPath, owner);
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
    return this.serialize(lockPath, async () => {
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
          letGo = await this.isWanted(lockPath);
        }
        if (letGo) {
          await this.dropLease(lockPath);
          lease = undefined;
        }
      }
      if (lease === undefined) {
        await this.releasing.get(lockPath)?.catch(() => undefined);
        const owner = await this.acquire(lockPath, createDirectory, true);
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
    await this.serialize(lockPath, () => this.dropLease(lockPath));
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
      const releasing = this.release(lockPath, lease.owner).finally(() => {
        if (this.releasing.get(lockPath) === releasing) this.releasing.delete(lockPath);
      });
      this.releasing.set(lockPath, releasing);
    }
    await this.releasing.get(lockPath);
  }

  private async isWanted(lockPath: string): Promise<boolean> {
    try {
      await this.fileSystem.lstat(`${lockPath}${WAIT_SUFFIX}`);
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
    const owner = await this.acquire(lockPath, createDirectory, true);
    let released = false;
    return {
      wanted: async () => {
        try {
          await this.fileSystem.lstat(`${lockPath}${WAIT_SUFFIX}`);
          return true;
        } catch (error) {
          if (isNotFound(error)) return false;
          throw toBackendError(error, `check lock ${lockPath}`);
        }
      },
      release: async () => {
        if (released) return;
        released = true;
        await this.release(lockPath, owner);
      },
    };
  }

  private async serialize<T>(key: string, action: () => Promise<T>): Promise<T> {
    let queues = processQueues.get(this.fileSystem);
    if (!queues) {
      queues = new Map();
      processQueues.set(this.fileSystem, queues);
    }
    const previous = queues.get(key) ?? Promise.resolve();
    let done!: () => void;
    const current = new Promise<void>((resolve) => {
      done = resolve;
    });
    const tail = previous.then(() => current);
    queues.set(key, tail);
    await previous;
    try {
      return await action();
    } finally {
      done();
      if (queues.get(key) === tail) queues.delete(key);
    }
  }

  private async acquire(
    lockPath: string,
    createDirectory: () => Promise<void>,
    signal: boolean,
  ): Promise<LockOwner> {
    const startedAt = Date.now();
    const boot = await this.boot();
    let delayMs = 1;
    let waiting = false;
    for (;;) {
      const owner: LockOwner = {
        pid: process.pid,
        host: thisHost,
        token: randomBytes(8).toString('hex'),
        createdAt: Date.now(),
        boot,
      };
      try {
        await this.create(lockPath, owner);
        heldTokens.add(owner.token);
        if (waiting)
          await this.fileSystem.unlink(`${lockPath}${WAIT_SUFFIX}`).catch(() => undefined);
        return owner;
      } catch (error) {
        if (isNotFound(error)) {
          await createDirectory();
          continue;
        }
        if (!isAlreadyExists(error)) throw toBackendError(error, `create lock ${lockPath}`);
      }
      if (await this.breakIfStale(lockPath)) continue;
      if (signal && !waiting) {
        waiting = true;
        await this.fileSystem.symlink('wait', `${lockPath}${WAIT_SUFFIX}`).catch(() => undefined);
      }
      if (Date.now() - startedAt > this.options.timeoutMs) {
        throw new BackendError(
          ADAPTER_NAME,
          `acquire lock ${lockPath} within ${this.options.timeoutMs} ms (held by a live process; raise \`lockTimeoutMs\` if writes are that slow)`,
          { isRetryable: true },
        );
      }
      await new Promise((resolve) => setTimeout(resolve, delayMs * (0.5 + Math.random())));
      delayMs = Math.min(delayMs * 2, 32);
    }
  }

  private async create(lockPath: string, owner: LockOwner): Promise<void> {
    const text = JSON.stringify(owner);
    if (!this.useFiles) {
      try {
        await this.fileSystem.symlink(text, lockPath);
        return;
      } catch (error) {
        const code = errorCode(error);
        if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'ENOSYS' && code !== 'EOPNOTSUPP') {
          throw error;
        }
        this.useFiles = true;
      }
    }
    const handle = await this.fileSystem.open(lockPath, 'wx');
    try {
      await writeAll(handle, Buffer.from(text), 0);
    } catch (error) {
      await handle.close().catch(() => undefined);
      await this.fileSystem.unlink(lockPath).catch(() => undefined);
      throw error;
    }
    await handle.close();
  }

  private async release(lockPath: string, owner: LockOwner): Promise<void> {
    heldTokens.delete(owner.token);
    try {
      // Held this long, another host may have judged the lock stale and taken it over:
      // remove it only if it is still ours.
      if (Date.now() - owner.createdAt > this.options.staleMs / 2) {
        const current = await this.readOwner(lockPath);
        if (current && current.token !== owner.token) return;
      }
      await this.fileSystem.unlink(lockPath);
    } catch (error) {
      if (!isNotFound(error)) throw toBackendError(error, `release lock ${lockPath}`);
    }
  }

  /** True when a stale lock was removed (or vanished meanwhile): try again at once. */
  private async breakIfStale(lockPath: string): Promise<boolean> {
    let ageMs: number;
    try {
      ageMs = Date.now() - (await this.fileSystem.lstat(lockPath)).mtimeMs;
    } catch (error) {
      if (isNotFound(error)) return true;
      throw toBackendError(error, `stat lock ${lockPath}`);
    }
    const owner = await this.readOwner(lockPath);
    if (!this.isStale(owner, ageMs, await this.boot())) return false;
    const aside = `${lockPath}.stale-${randomBytes(6).toString('hex')}`;
    try {
      await this.fileSystem.rename(lockPath, aside);
    } catch (error) {
      if (isNotFound(error)) return true;
      throw toBackendError(error, `break stale lock ${lockPath}`);
    }
    const moved = await this.readOwner(aside);
    const sameLock = owner === null ? moved === null : moved?.token === owner.token;
    if (!sameLock) {
      // Someone else broke the stale lock and took a fresh one, which we just moved: put it back.
      await this.fileSystem.rename(aside, lockPath).catch(() => undefined);
      return false;
    }
    await this.fileSystem.unlink(aside).catch(() => undefined);
    return true;
  }

  private isStale(owner: LockOwner | null, ageMs: number, bootId: string | null): boolean {
    if (owner === null) return ageMs > Math.min(UNREADABLE_STALE_MS, this.options.staleMs);
    if (owner.host !== thisHost) return ageMs > this.options.staleMs;
    if (isFromEarlierBoot(owner, bootId)) return true;
    return !isOwnerAlive(owner.pid, owner.token);
  }

  private boot(): Promise<string | null> {
    this.bootId ??= currentBootId(this.fileSystem);
    return this.bootId;
  }

  private async readOwner(path: string): Promise<LockOwner | null> {
    let text: string;
    try {
      text = await this.fileSystem.readlink(path);
    } catch (error) {
      if (isNotFound(error)) return null;
      if (errorCode(error) !== 'EINVAL') throw toBackendError(error, `read lock ${path}`);
      // Not a symbolic link: a lock file (the O_EXCL fallback).
      try {
        text = Buffer.from(await this.fileSystem.readFile(path)).toString('utf8');
      } catch (fileError) {
        if (isNotFound(fileError)) return null;
        throw toBackendError(fileError, `read lock ${path}`);
      }
    }
    try {
      const parsed = JSON.parse(text) as Partial<LockOwner>;
      if (
        typeof parsed.pid === 'number' &&
        typeof parsed.host === 'string' &&
        typeof parsed.token === 'string' &&
        typeof parsed.createdAt === 'number'
      ) {
        return parsed as LockOwner;
      }
    } catch {
      // An empty or half-written lock file: its writer died before finishing it.
    }
    return null;
  }
}

/**
 * Whether the process that wrote a lock or a log on this host, in this boot, still runs:
 * this process only under a token it still holds, another process as long as it exists.
 */
export function isOwnerAlive(pid: number, token: string): boolean {
  if (pid === process.pid) return heldTokens.has(token);
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return errorCode(error) === 'EPERM';
  }
}

/** Marks a token as held by this process (a lock, or the group-commit log of an adapter). */
export function holdToken(token: string): void {
  heldTokens.add(token);
}

export function releaseToken(token: string): void {
  heldTokens.delete(token);
}
