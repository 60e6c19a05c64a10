import type { Durability } from './durability.js';
import { errorCode, isAlreadyExists, toBackendError } from './errors.js';
import type { FileLocks } from './file-lock.js';
import type { FileSystem } from './file-system.js';
import type { Layout } from './layout.js';
import type { ResolvedFsAdapterOptions } from './options.js';
import type { SegmentedFiles } from './segmented-file.js';

/** What the stores of one adapter share. */
export interface AdapterContext {
  readonly options: ResolvedFsAdapterOptions;
  readonly fileSystem: FileSystem;
  readonly layout: Layout;
  readonly durability: Durability;
  readonly segments: SegmentedFiles;
  readonly locks: FileLocks;
}

/** mkdir -p; a directory that already exists is fine. */
export async function makeDirectory(fileSystem: FileSystem, path: string): Promise<void> {
  try {
    await fileSystem.mkdir(path);
  } catch (error) {
    if (!isAlreadyExists(error)) throw toBackendError(error, `create directory ${path}`);
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
    const code = errorCode(error);
    if (code === 'ENOTEMPTY' || code === 'EEXIST' || code === 'ENOENT') return false;
    throw toBackendError(error, `remove directory ${path}`);
  }
}
