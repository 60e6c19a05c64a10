import { randomBytes } from 'node:crypto';
import { isFromEarlierBoot } from './boot.js';
import { isNotFound, toBackendError } from './errors.js';
import type { FileSystem } from './file-system.js';
import { isOwnerAlive, type LockOwner, readLockOwner, thisHost } from './lock-owner.js';

const UNREADABLE_STALE_MS = 2_000;

/**
 * True when a stale lock was removed (or vanished meanwhile): try again at once. What makes a
 * lock stale, and why breaking it checks what it moved, is told on FileLocks (B4).
 */
export async function breakIfStale(
  fileSystem: FileSystem,
  lockPath: string,
  staleMs: number,
  bootId: Promise<string | null>,
): Promise<boolean> {
  let ageMs: number;
  try {
    ageMs = Date.now() - (await fileSystem.lstat(lockPath)).mtimeMs;
  } catch (error) {
    if (isNotFound(error)) return true;
    throw toBackendError(error, `stat lock ${lockPath}`);
  }
  const owner = await readLockOwner(fileSystem, lockPath);
  if (!isStale(owner, ageMs, await bootId, staleMs)) return false;
  const aside = `${lockPath}.stale-${randomBytes(6).toString('hex')}`;
  try {
    await fileSystem.rename(lockPath, aside);
  } catch (error) {
    if (isNotFound(error)) return true;
    throw toBackendError(error, `break stale lock ${lockPath}`);
  }
  const moved = await readLockOwner(fileSystem, aside);
  const sameLock = owner === null ? moved === null : moved?.token === owner.token;
  if (!sameLock) {
    // Someone else broke the stale lock and took a fresh one, which we just moved: put it back.
    await fileSystem.rename(aside, lockPath).catch(() => undefined);
    return false;
  }
  await fileSystem.unlink(aside).catch(() => undefined);
  return true;
}

function isStale(
  owner: LockOwner | null,
  ageMs: number,
  bootId: string | null,
  staleMs: number,
): boolean {
  if (owner === null) return ageMs > Math.min(UNREADABLE_STALE_MS, staleMs);
  if (owner.host !== thisHost) return ageMs > staleMs;
  if (isFromEarlierBoot(owner, bootId)) return true;
  return !isOwnerAlive(owner.pid, owner.token);
}
