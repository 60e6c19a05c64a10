import { join } from 'node:path';
import type { AdapterContext } from './context.js';
import { isNotADirectoryErrno } from './errno-table.js';
import { errorCode, isNotFound, toBackendError } from './errors.js';
import { COLLECTIONS } from './layout.js';

/**
 * B2: temp files left by a crash (and lock files a stale-lock breaker moved aside, and
 * wait marks of writers that gave up) are
 * removed when the adapter opens, once they are older than `tempMaxAgeMs`; younger ones may
 * belong to a writer in another process that is still running. Returns how many went.
 */
const LEFTOVER = /(\.\d+-[0-9a-f]{12}-\d+\.tmp|\.stale-[0-9a-f]{12}|lock\.wait)$/;
const CONCURRENCY = 16;

export async function sweepLeftovers(context: AdapterContext): Promise<number> {
  const { layout } = context;
  const directories: string[] = [layout.root, layout.index.directory];
  for (const collection of COLLECTIONS) {
    const collectionDirectory = layout.collectionDirectory(collection);
    for (const name of await listOptional(context, collectionDirectory)) {
      directories.push(join(collectionDirectory, name));
    }
  }
  for (const name of await listOptional(context, layout.quarantineDirectory)) {
    directories.push(join(layout.quarantineDirectory, name));
  }
  for (const name of await listOptional(context, layout.journalsDirectory)) {
    directories.push(join(layout.journalsDirectory, name));
  }
  let removed = 0;
  let next = 0;
  const worker = async () => {
    while (next < directories.length) {
      removed += await sweepDirectory(context, directories[next++] as string);
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, directories.length) }, worker));
  return removed;
}

async function sweepDirectory(context: AdapterContext, directory: string): Promise<number> {
  const { fileSystem, options } = context;
  let removed = 0;
  for (const name of await listOptional(context, directory)) {
    if (!LEFTOVER.test(name)) continue;
    const path = join(directory, name);
    try {
      const stats = await fileSystem.lstat(path);
      if (stats.isDirectory() || Date.now() - stats.mtimeMs < options.tempMaxAgeMs) continue;
      await fileSystem.unlink(path);
      removed++;
    } catch (error) {
      if (!isNotFound(error)) throw toBackendError(error, `sweep ${path}`);
    }
  }
  return removed;
}

/** Entries of a directory; none when it is missing or is not a directory. */
async function listOptional(context: AdapterContext, directory: string): Promise<string[]> {
  try {
    return await context.fileSystem.readdir(directory);
  } catch (error) {
    if (isNotFound(error) || isNotADirectoryErrno(errorCode(error))) return [];
    throw toBackendError(error, `list ${directory}`);
  }
}
