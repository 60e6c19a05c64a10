import { randomBytes } from 'node:crypto';
import { BackendError } from '@keepsake/core';
import { currentBootId } from './boot.js';
import { isSymlinkUnsupportedErrno } from './errno-table.js';
import { ADAPTER_NAME, errorCode, isAlreadyExists, isNotFound, toBackendError } from './errors.js';
import { type FileSystem, writeAll } from './file-system.js';
import { holdToken, type LockOwner, readLockOwner, releaseToken, thisHost } from './lock-owner.js';
import { breakIfStale } from './stale-lock.js';

/** The adapter's `lockStaleMs` and `lockTimeoutMs`. */
export interface LockOptions {
  readonly staleMs: number;
  readonly timeoutMs: number;
}

/** Next to a leased lock: a writer is waiting for it. */
export const WAIT_SUFFIX = '.wait';

/**
 * Creating and removing one lock file (B4, see FileLocks): the atomic create, waiting with
 * backoff while a live process holds the lock, breaking it when stale.
 */
export class LockAcquirer {
  private readonly fileSystem: FileSystem;
  private readonly options: LockOptions;
  /** Set once symlink() turned out unsupported here: locks are O_EXCL files from then on. */
  private useFiles = false;
  /** This machine's boot id, read once: it cannot change while this process lives. */
  private bootId: Promise<string | null> | null = null;

  constructor(fileSystem: FileSystem, options: LockOptions) {
    this.fileSystem = fileSystem;
    this.options = options;
  }

  async acquire(
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
        holdToken(owner.token);
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
      if (await breakIfStale(this.fileSystem, lockPath, this.options.staleMs, this.boot())) {
        continue;
      }
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

  async release(lockPath: string, owner: LockOwner): Promise<void> {
    releaseToken(owner.token);
    try {
      // Held this long, another host may have judged the lock stale and taken it over:
      // remove it only if it is still ours.
      if (Date.now() - owner.createdAt > this.options.staleMs / 2) {
        const current = await readLockOwner(this.fileSystem, lockPath);
        if (current && current.token !== owner.token) return;
      }
      await this.fileSystem.unlink(lockPath);
    } catch (error) {
      if (!isNotFound(error)) throw toBackendError(error, `release lock ${lockPath}`);
    }
  }

  private async create(lockPath: string, owner: LockOwner): Promise<void> {
    const text = JSON.stringify(owner);
    if (!this.useFiles) {
      try {
        await this.fileSystem.symlink(text, lockPath);
        return;
      } catch (error) {
        if (!isSymlinkUnsupportedErrno(errorCode(error))) throw error;
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

  private boot(): Promise<string | null> {
    this.bootId ??= currentBootId(this.fileSystem);
    return this.bootId;
  }
}
