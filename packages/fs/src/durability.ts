import { dirname } from 'node:path';
import { BackendError } from '@keepsake/core';
import { isUnsupportedDirectorySyncErrno } from './errno-table.js';
import { ADAPTER_NAME, errorCode, isNotFound, toBackendError } from './errors.js';
import type { FileSystem } from './file-system.js';

/**
 * B3: what "durable" means on a filesystem, in one place.
 *
 * A file's data is durable after fsync of the file; its name is durable after fsync of the
 * directory holding it; that directory's own name after fsync of its parent, and so on up
 * to the root. The adapter fsyncs a directory after every durable rename or create in it,
 * and remembers which directories' names it already made durable, so the chain up to the
 * root costs one fsync per directory per process, not one per write.
 *
 * Non-durable writes make no flush call at all; they are remembered here so `sync()` (C1)
 * can make them durable later.
 */
export class Durability {
  /** Directories whose entry in their parent is durable, with the identity that was made so. */
  private readonly linked = new Map<string, string | null>();
  /** Directories with non-durable changes, and the files changed in them. */
  private readonly dirty = new Map<string, Set<string>>();

  private readonly fileSystem: FileSystem;

  constructor(fileSystem: FileSystem) {
    this.fileSystem = fileSystem;
  }

  /**
   * fsync(2) of a directory. Platforms that cannot open or fsync a directory (Windows:
   * EPERM, EISDIR; some network filesystems: EINVAL) are tolerated; EIO and every other
   * error fail the write (B3).
   */
  async syncDirectory(directory: string): Promise<void> {
    let handle: Awaited<ReturnType<FileSystem['open']>>;
    try {
      handle = await this.fileSystem.open(directory, 'r');
    } catch (error) {
      if (isUnsupportedDirectorySync(error)) return;
      throw toBackendError(error, `open directory ${directory} for fsync`);
    }
    try {
      await handle.sync();
    } catch (error) {
      if (!isUnsupportedDirectorySync(error)) {
        throw toBackendError(error, `fsync directory ${directory}`);
      }
    } finally {
      await handle.close().catch(() => undefined);
    }
  }

  /** fsync(2) of a file by path; a file that is gone has nothing left to flush. */
  async syncFile(path: string): Promise<void> {
    let handle: Awaited<ReturnType<FileSystem['open']>>;
    try {
      handle = await this.fileSystem.open(path, 'r');
    } catch (error) {
      if (isNotFound(error)) return;
      throw toBackendError(error, `open ${path} for fsync`);
    }
    try {
      await handle.sync();
    } catch (error) {
      throw toBackendError(error, `fsync ${path}`);
    } finally {
      await handle.close().catch(() => undefined);
    }
  }

  /**
   * Makes the name of `directory` durable in its parent, and so on up to `/`.
   * `stable` directories (the root and the collection directories) are never removed while
   * the adapter runs, so they are remembered by path; others (one per document, one per
   * session's journals) may be removed and re-created by another process, so they are
   * remembered with their inode and checked with one stat.
   */
  async ensureLinked(directory: string, stable: boolean): Promise<void> {
    let identity: string | null = null;
    if (this.linked.has(directory)) {
      if (stable) return;
      identity = await this.identityOf(directory);
      if (this.linked.get(directory) === identity) return;
    } else if (!stable) {
      identity = await this.identityOf(directory);
    }
    const parent = dirname(directory);
    if (parent !== directory) {
      await this.syncDirectory(parent);
      // Up to the filesystem root: `open()` may have created the root's parents too (mkdir -p).
      await this.ensureLinked(parent, true);
    }
    this.linked.set(directory, identity);
  }

  /** Forgets that `directory` was linked (the adapter removed it). */
  forget(directory: string): void {
    this.linked.delete(directory);
    this.dirty.delete(directory);
  }

  /** Remembers a non-durable change for `sync()`. */
  markDirty(directory: string, file?: string): void {
    let files = this.dirty.get(directory);
    if (!files) {
      files = new Set();
      this.dirty.set(directory, files);
    }
    if (file !== undefined) files.add(file);
  }

  /**
   * A durable write left every file of `directory` and its entries durable (a document's
   * directory holds only its base and its deltas): `sync()` owes it nothing any more.
   */
  markClean(directory: string): void {
    this.dirty.delete(directory);
  }

  /** C1: fsyncs every file and directory changed without durability, `concurrency` at a time. */
  async syncDirty(concurrency: number): Promise<void> {
    const entries = [...this.dirty.entries()];
    this.dirty.clear();
    const failures: unknown[] = [];
    let next = 0;
    const worker = async () => {
      while (next < entries.length) {
        const [directory, files] = entries[next++] as [string, Set<string>];
        try {
          for (const file of files) await this.syncFile(file);
          if (await this.exists(directory)) {
            await this.syncDirectory(directory);
            await this.ensureLinked(directory, false);
          }
        } catch (error) {
          failures.push(error);
          this.markDirty(directory);
          for (const file of files) this.markDirty(directory, file);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, entries.length) }, worker));
    if (failures.length > 0) {
      throw new BackendError(ADAPTER_NAME, `sync ${failures.length} directories`, {
        cause: failures[0],
      });
    }
  }

  /** Inode and birth time: an inode number alone is reused after a directory is removed. */
  private async identityOf(directory: string): Promise<string> {
    try {
      const stats = await this.fileSystem.stat(directory);
      return `${stats.ino}:${stats.birthtimeMs}`;
    } catch (error) {
      throw toBackendError(error, `stat ${directory}`);
    }
  }

  private async exists(path: string): Promise<boolean> {
    try {
      await this.fileSystem.stat(path);
      return true;
    } catch (error) {
      if (isNotFound(error)) return false;
      throw toBackendError(error, `stat ${path}`);
    }
  }
}

function isUnsupportedDirectorySync(error: unknown): boolean {
  return isUnsupportedDirectorySyncErrno(errorCode(error));
}
