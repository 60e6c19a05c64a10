import * as nodeFs from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { errorCode } from './errors.js';

/**
 * `mkdir -p` for the real filesystem, resolving with the first directory it created (as
 * Node's recursive mkdir does), and failing with the errno of the first directory that
 * cannot be made.
 *
 * Not Node's `mkdir(path, { recursive: true })`: where mkdir answers ENOENT for a directory
 * whose parent exists (under /proc, some FUSE and network mounts), Node's retries the parent
 * and the child forever at full CPU (issue 35: `fsAdapter({ directory: '/proc/self/nope' })`
 * never opened, and nothing the store was asked answered). Here each directory of the path
 * is tried at most twice — before and after its parent is made — so the call always ends.
 */
export async function makeDirectories(path: string): Promise<string | undefined> {
  const target = resolve(path);
  try {
    await nodeFs.mkdir(target);
    return target;
  } catch (error) {
    if (errorCode(error) === 'EEXIST') return existingDirectory(target, error);
    const parent = dirname(target);
    if (errorCode(error) !== 'ENOENT' || parent === target) throw error;
  }
  const first = await makeDirectories(dirname(target));
  try {
    await nodeFs.mkdir(target);
  } catch (error) {
    // Made meanwhile by another writer: fine, as long as it is a directory.
    if (errorCode(error) === 'EEXIST') return existingDirectory(target, error, first);
    throw error;
  }
  return first ?? target;
}

/** An existing entry is fine when it is a directory; else the EEXIST stands (as Node's). */
async function existingDirectory(
  path: string,
  exists: unknown,
  first?: string,
): Promise<string | undefined> {
  const stats = await nodeFs.stat(path).catch(() => null);
  if (stats?.isDirectory() !== true) throw exists;
  return first;
}
