import { isNotFound, toBackendError } from './errors.js';
import type { FileStats, FileSystem } from './file-system.js';

// Calls on a file that may rightly be missing (a base not written yet, deltas already
// compacted away): absence is an answer, every other failure a backend error (A2).

export async function readOptional(
  fileSystem: FileSystem,
  path: string,
): Promise<Uint8Array | null> {
  try {
    return await fileSystem.readFile(path);
  } catch (error) {
    if (isNotFound(error)) return null;
    throw toBackendError(error, `read ${path}`);
  }
}

export async function statOptional(
  fileSystem: FileSystem,
  path: string,
): Promise<FileStats | null> {
  try {
    return await fileSystem.stat(path);
  } catch (error) {
    if (isNotFound(error)) return null;
    throw toBackendError(error, `stat ${path}`);
  }
}

/**
 * `statOptional`, done before it returns where the filesystem has `statSync` (a result, not
 * a promise), else through `stat`.
 */
export function statOptionalNow(
  fileSystem: FileSystem,
  path: string,
): FileStats | null | Promise<FileStats | null> {
  if (fileSystem.statSync === undefined) return statOptional(fileSystem, path);
  try {
    return fileSystem.statSync(path);
  } catch (error) {
    if (isNotFound(error)) return null;
    throw toBackendError(error, `stat ${path}`);
  }
}

export async function unlinkOptional(fileSystem: FileSystem, path: string): Promise<void> {
  try {
    await fileSystem.unlink(path);
  } catch (error) {
    if (!isNotFound(error)) throw toBackendError(error, `remove ${path}`);
  }
}
