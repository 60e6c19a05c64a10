import { join } from 'node:path';
import type { AdapterContext } from './context.js';
import { isNotADirectoryErrno } from './errno-table.js';
import { errorCode, isNotFound, toBackendError } from './errors.js';
import { decodeName } from './id-encoding.js';
import { COLLECTIONS, JOURNAL_SUFFIX, LOCK_SUFFIX } from './layout.js';
import { isQuarantineEntryName, METADATA_FILE } from './quarantine.js';

/**
 * B2: temp files left by a crash (and lock files a stale-lock breaker moved aside, and
 * wait marks of writers that gave up) are
 * removed when the adapter opens, once they are older than `tempMaxAgeMs`; younger ones may
 * belong to a writer in another process that is still running. Returns how many went.
 *
 * H1: only this store's directories are looked into (a document's or a session's journals'
 * directory has an encoded name, a quarantine entry its own), and only leftovers of this
 * store's own files: another store's directory may sit among them (a store on
 * `<root>/journals` or `<root>/sessions/x`), and its temp files are its own.
 */
const LEFTOVER = /^(.+?)(\.\d+-[0-9a-f]{12}-\d+\.tmp|\.stale-[0-9a-f]{12}|\.wait)$/;
const CONCURRENCY = 16;

/** Whether a leftover of the file `stem` belongs to the directory being swept. */
type OwnsFile = (stem: string) => boolean;

const ROOT_FILES: OwnsFile = (stem) => stem === 'keepsake-fs.json';
const SEGMENT_FILES: OwnsFile = (stem) =>
  stem === 'document' || stem === 'deltas' || stem === 'lock';
const QUARANTINE_FILES: OwnsFile = (stem) => SEGMENT_FILES(stem) || stem === METADATA_FILE;
const JOURNAL_FILES: OwnsFile = (stem) => {
  const suffix = stem.endsWith(JOURNAL_SUFFIX) ? JOURNAL_SUFFIX : LOCK_SUFFIX;
  return stem.endsWith(suffix) && decodeName(stem.slice(0, -suffix.length)) !== null;
};

export async function sweepLeftovers(context: AdapterContext): Promise<number> {
  const { layout } = context;
  const directories: Array<readonly [string, OwnsFile]> = [
    [layout.root, ROOT_FILES],
    [layout.index.directory, SEGMENT_FILES],
  ];
  for (const collection of COLLECTIONS) {
    const collectionDirectory = layout.collectionDirectory(collection);
    for (const name of await listOptional(context, collectionDirectory)) {
      if (decodeName(name) === null) continue;
      directories.push([join(collectionDirectory, name), SEGMENT_FILES]);
    }
  }
  for (const name of await listOptional(context, layout.quarantineDirectory)) {
    if (!isQuarantineEntryName(name)) continue;
    directories.push([join(layout.quarantineDirectory, name), QUARANTINE_FILES]);
  }
  for (const name of await listOptional(context, layout.journalsDirectory)) {
    if (decodeName(name) === null) continue;
    directories.push([join(layout.journalsDirectory, name), JOURNAL_FILES]);
  }
  let removed = 0;
  let next = 0;
  const worker = async () => {
    while (next < directories.length) {
      const [directory, owns] = directories[next++]!;
      removed += await sweepDirectory(context, directory, owns);
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, directories.length) }, worker));
  return removed;
}

async function sweepDirectory(
  context: AdapterContext,
  directory: string,
  owns: OwnsFile,
): Promise<number> {
  const { fileSystem, options } = context;
  let removed = 0;
  for (const name of await listOptional(context, directory)) {
    const leftover = LEFTOVER.exec(name);
    if (leftover === null || !owns(leftover[1]!)) continue;
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
