import { dirname, resolve } from 'node:path';
import { Durability } from './durability.js';
import { isDirectoryInUseOrGoneErrno } from './errno-table.js';
import { errorCode, isAlreadyExists, toBackendError } from './errors.js';
import { FileLocks } from './file-lock.js';
import type { FileSystem } from './file-system.js';
import { Layout } from './layout.js';
import type { ResolvedFsAdapterOptions } from './options.js';
import { SegmentedFiles } from './segmented-file.js';

/** What the stores of one adapter share. */
export interface AdapterContext {
  readonly options: ResolvedFsAdapterOptions;
  readonly fileSystem: FileSystem;
  readonly layout: Layout;
  readonly durability: Durability;
  readonly segments: SegmentedFiles;
  readonly locks: FileLocks;
}

/** What one adapter's stores share, wired together (fsAdapter; tests of one store alone). */
export function createAdapterContext(options: ResolvedFsAdapterOptions): AdapterContext {
  const fileSystem = options.fileSystem;
  const durability = new Durability(fileSystem);
  const segments = new SegmentedFiles(fileSystem, durability, options.retrySharingViolations);
  return {
    options,
    fileSystem,
    layout: new Layout(resolve(options.directory)),
    durability,
    segments,
    locks: new FileLocks(
      fileSystem,
      { staleMs: options.lockStaleMs, timeoutMs: options.lockTimeoutMs },
      // A document's or the index's lock file sits in the directory of its files.
      (lockPath) => segments.closeHeld(dirname(lockPath)),
      () => segments.onLocalDisk,
    ),
  };
}

/** mkdir -p; a directory that already exists is fine. `operation` names it in an error. */
export async function makeDirectory(
  fileSystem: FileSystem,
  path: string,
  operation = `create directory ${path}`,
): Promise<void> {
  try {
    await fileSystem.mkdir(path);
  } catch (error) {
    if (!isAlreadyExists(error)) throw toBackendError(error, operation);
  }
}

/**
 * rmdir of a directory another writer may be using again: one that is not empty (a lock file,
 * a new document) or already gone is left alone; other failures are backend errors.
 */
export async function removeDirectoryIfEmpty(
  fileSystem: FileSystem,
  path: string,
): Promise<boolean> {
  try {
    await fileSystem.rmdir(path);
    return true;
  } catch (error) {
    if (isDirectoryInUseOrGoneErrno(errorCode(error))) return false;
    throw toBackendError(error, `remove directory ${path}`);
  }
}
