import type { FileHandle, FileStats, FileSystem } from '../file-system.js';

export interface FileSystemCallCounts {
  /** fsync(2) calls, on files and directories. */
  sync: number;
  /** fdatasync(2) calls. */
  datasync: number;
  opens: number;
  renames: number;
  /** write calls (`write` and `writeSync`), in all and by the path the file was opened at. */
  writes: number;
  writesByPath: Map<string, number>;
}

/**
 * A pass-through over a real filesystem layer that counts calls, so a test can assert that a
 * non-durable write made no fsync at all (B3) or how many a durable one made.
 */
export function countingFileSystem(inner: FileSystem): {
  fileSystem: FileSystem;
  counts: FileSystemCallCounts;
} {
  const counts: FileSystemCallCounts = {
    sync: 0,
    datasync: 0,
    opens: 0,
    renames: 0,
    writes: 0,
    writesByPath: new Map(),
  };
  const countWrite = (path: string) => {
    counts.writes++;
    counts.writesByPath.set(path, (counts.writesByPath.get(path) ?? 0) + 1);
  };
  const wrap = (handle: FileHandle, path: string): FileHandle => ({
    write: (...args) => {
      countWrite(path);
      return handle.write(...args);
    },
    ...(handle.writeSync
      ? {
          writeSync: (buffer: Uint8Array, offset: number, length: number, at: number | null) => {
            countWrite(path);
            return handle.writeSync?.(buffer, offset, length, at) as number;
          },
        }
      : {}),
    ...(handle.writevSync
      ? {
          writevSync: (buffers: readonly Uint8Array[], at: number) => {
            countWrite(path);
            return handle.writevSync?.(buffers, at) as number;
          },
        }
      : {}),
    read: (...args) => handle.read(...args),
    sync: () => {
      counts.sync++;
      return handle.sync();
    },
    datasync: () => {
      counts.datasync++;
      return handle.datasync();
    },
    truncate: (length) => handle.truncate(length),
    stat: () => handle.stat(),
    close: () => handle.close(),
  });
  const fileSystem: FileSystem = {
    open: async (path, flags) => {
      counts.opens++;
      return wrap(await inner.open(path, flags), path);
    },
    rename: (from, to) => {
      counts.renames++;
      return inner.rename(from, to);
    },
    unlink: (path) => inner.unlink(path),
    mkdir: (path) => inner.mkdir(path),
    rmdir: (path) => inner.rmdir(path),
    readdir: (path) => inner.readdir(path),
    readFile: (path) => inner.readFile(path),
    stat: (path) => inner.stat(path),
    ...(inner.statSync ? { statSync: (path: string) => inner.statSync?.(path) as FileStats } : {}),
    lstat: (path) => inner.lstat(path),
    ...(inner.lstatSync
      ? { lstatSync: (path: string) => inner.lstatSync?.(path) as FileStats }
      : {}),
    ...(inner.readdirSync
      ? { readdirSync: (path: string) => inner.readdirSync?.(path) as string[] }
      : {}),
    symlink: (target, path) => inner.symlink(target, path),
    readlink: (path) => inner.readlink(path),
    ...(inner.bootId ? { bootId: () => inner.bootId?.() ?? Promise.resolve(null) } : {}),
    ...(inner.isLocalDisk
      ? { isLocalDisk: (path: string) => inner.isLocalDisk?.(path) ?? Promise.resolve(false) }
      : {}),
  };
  return { fileSystem, counts };
}
