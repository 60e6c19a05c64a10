import { hostname } from 'node:os';
import { isNotASymlinkErrno, isOtherUsersProcessErrno } from './errno-table.js';
import { errorCode, isNotFound, toBackendError } from './errors.js';
import type { FileSystem } from './file-system.js';

/**
 * Who took a lock, as its lock file says (see FileLocks): enough for another process to tell
 * whether the owner is gone.
 */
export interface LockOwner {
  pid: number;
  host: string;
  token: string;
  createdAt: number;
  /** The boot id of the machine when the lock was taken (null where there is none). */
  boot?: string | null;
}

const heldTokens = new Set<string>();
export const thisHost = hostname();

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
    return isOtherUsersProcessErrno(errorCode(error));
  }
}

/** Marks a token as held by this process (a lock, or the group-commit log of an adapter). */
export function holdToken(token: string): void {
  heldTokens.add(token);
}

export function releaseToken(token: string): void {
  heldTokens.delete(token);
}

/** The owner a lock file names, or null when it is gone or cannot be read. */
export async function readLockOwner(
  fileSystem: FileSystem,
  path: string,
): Promise<LockOwner | null> {
  let text: string;
  try {
    text = await fileSystem.readlink(path);
  } catch (error) {
    if (isNotFound(error)) return null;
    if (!isNotASymlinkErrno(errorCode(error))) throw toBackendError(error, `read lock ${path}`);
    // Not a symbolic link: a lock file (the O_EXCL fallback).
    try {
      text = Buffer.from(await fileSystem.readFile(path)).toString('utf8');
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
