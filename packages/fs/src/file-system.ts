import { lstatSync, readdirSync, readFile, statSync, watch, writeSync, writevSync } from 'node:fs';
import * as nodeFs from 'node:fs/promises';
import { isLocalFileSystemType } from './local-disk.js';
import { makeDirectories } from './make-directories.js';

/**
 * The filesystem calls the adapter makes, and nothing more. The default is `node:fs/promises`;
 * tests pass a wrapper to count fsync calls (B3) or a fault-injecting layer that simulates
 * power loss (`@keepsake/fs/testing`).
 *
 * Errors must carry the POSIX `code` (`ENOENT`, `EEXIST`, `EIO`…) as Node's do: the adapter
 * branches on codes, never on message text.
 */
export interface FileSystem {
  /** `flags` as in `fs.open`: `'r'`, `'r+'`, `'wx'` (create exclusively), `'a+'`. */
  open(path: string, flags: OpenFlags): Promise<FileHandle>;
  rename(from: string, to: string): Promise<void>;
  unlink(path: string): Promise<void>;
  /** Always recursive; resolves with the first directory it created, if any (as Node's does). */
  mkdir(path: string): Promise<string | undefined>;
  rmdir(path: string): Promise<void>;
  readdir(path: string): Promise<string[]>;
  readFile(path: string): Promise<Uint8Array>;
  stat(path: string): Promise<FileStats>;
  /**
   * The same `stat`, done before it returns. Optional: a writer holding a document's lock
   * checks with it that the files are still the ones it knows, without a round trip through
   * libuv's thread pool per save; without it, `stat` is used. A layer that replaces `stat`
   * (`{ ...nodeFileSystem, stat }`) must replace or leave out `statSync` as well.
   */
  statSync?(path: string): FileStats;
  /** Stats of the entry itself, not of what a symbolic link points to. */
  lstat(path: string): Promise<FileStats>;
  /**
   * The same `lstat`, done before it returns. Optional, like `statSync`, and used only where
   * `isLocalDisk` says yes: a read of a journal looks at its lock file with it, and a writer
   * holding a lock looks for another writer's wait mark. A layer that replaces `lstat` must
   * replace or leave out `lstatSync` as well.
   */
  lstatSync?(path: string): FileStats;
  /**
   * The same `readdir`, done before it returns. Optional, like `statSync`, and used only where
   * `isLocalDisk` says yes: a journal's takeover looks for dead processes' logs with it. A
   * layer that replaces `readdir` must replace or leave out `readdirSync` as well.
   */
  readdirSync?(path: string): string[];
  /** Creates a symbolic link; fails with EEXIST when `path` exists (lock files use this). */
  symlink(target: string, path: string): Promise<void>;
  readlink(path: string): Promise<string>;
  /**
   * An id that changes each time the machine boots (Linux: `/proc/sys/kernel/random/boot_id`),
   * or null where there is none; lock files and group-commit logs from an earlier boot are
   * dead. Optional: without it, the boot time (from the uptime) is used.
   */
  bootId?(): Promise<string | null>;
  /**
   * Whether `path` lies on a disk of this machine (ext4, xfs, btrfs, tmpfs…), not on a network
   * or FUSE filesystem. Optional (without it: false). Only where it says true does the adapter
   * use `statSync` on its hot paths and keep a document's delta file open between saves
   * (see local-disk.ts).
   */
  isLocalDisk?(path: string): Promise<boolean>;
  /**
   * Calls `listener` with the name of an entry of `directory` that was created, changed or
   * removed (or null when the platform does not say which), until the returned watcher is
   * closed; throws when the directory cannot be watched. Optional (without it, a follower on
   * another process learns of appends at its poll): the kernel's notifications (inotify)
   * for the real filesystem. It must not keep the process alive by itself.
   */
  watchDirectory?(
    directory: string,
    listener: (name: string | null) => void,
  ): { close(): void; on(event: 'error', listener: () => void): unknown };
}

export type OpenFlags = 'r' | 'r+' | 'wx' | 'a+';

export interface FileHandle {
  write(
    buffer: Uint8Array,
    offset: number,
    length: number,
    position: number | null,
  ): Promise<{ bytesWritten: number }>;
  /**
   * The same write, done before it returns (the bytes land in the page cache; nothing is
   * flushed). Optional: the journal uses it where present so a streamed event costs a
   * syscall, not a round trip through libuv's thread pool; without it, `write` is used.
   */
  writeSync?(buffer: Uint8Array, offset: number, length: number, position: number | null): number;
  /**
   * writev(2) of `buffers` at `position`, done before it returns, like `writeSync`; returns
   * the bytes written (possibly fewer than all). Optional: the group-commit log uses it so a
   * flush writes its entries where they are instead of copying them into one buffer first;
   * without it, the entries are joined and written with `writeSync` or `write`.
   */
  writevSync?(buffers: readonly Uint8Array[], position: number): number;
  read(
    buffer: Uint8Array,
    offset: number,
    length: number,
    position: number,
  ): Promise<{ bytesRead: number }>;
  /** fsync(2): data and metadata. Also used on directories. */
  sync(): Promise<void>;
  /** fdatasync(2): data (and the size), not timestamps. */
  datasync(): Promise<void>;
  truncate(length: number): Promise<void>;
  stat(): Promise<FileStats>;
  close(): Promise<void>;
}

export interface FileStats {
  readonly size: number;
  readonly mtimeMs: number;
  readonly ino: number;
  /** Creation time where the filesystem records it, else 0; with `ino`, a file's identity. */
  readonly birthtimeMs: number;
  isDirectory(): boolean;
  isFile(): boolean;
  isSymbolicLink(): boolean;
}

/** The real filesystem, through `node:fs/promises`. */
export const nodeFileSystem: FileSystem = {
  async open(path, flags) {
    return new NodeFileHandle(await nodeFs.open(path, flags));
  },
  rename: (from, to) => nodeFs.rename(from, to),
  unlink: (path) => nodeFs.unlink(path),
  // Not Node's recursive mkdir, which can loop forever (see makeDirectories).
  mkdir: (path) => makeDirectories(path),
  rmdir: (path) => nodeFs.rmdir(path),
  readdir: (path) => nodeFs.readdir(path),
  // The callback form: the same open, fstat, read and close, with less JavaScript around
  // them than the promise form's file handle (a cold start reads thousands of files).
  readFile: (path) =>
    new Promise<Uint8Array>((resolve, reject) => {
      readFile(path, (error, data) => (error ? reject(error) : resolve(data)));
    }),
  stat: (path) => nodeFs.stat(path),
  statSync: (path) => statSync(path),
  lstat: (path) => nodeFs.lstat(path),
  lstatSync: (path) => lstatSync(path),
  readdirSync: (path) => readdirSync(path),
  symlink: (target, path) => nodeFs.symlink(target, path),
  readlink: (path) => nodeFs.readlink(path),
  async bootId() {
    try {
      return (await nodeFs.readFile('/proc/sys/kernel/random/boot_id', 'utf8')).trim();
    } catch {
      return null;
    }
  },
  watchDirectory(directory, listener) {
    return watch(directory, { persistent: false }, (_event, name) => listener(name));
  },
  async isLocalDisk(path) {
    // The magic numbers are Linux's; elsewhere every call stays asynchronous.
    if (process.platform !== 'linux') return false;
    try {
      return isLocalFileSystemType((await nodeFs.statfs(path)).type);
    } catch {
      return false;
    }
  },
};

/** Node's file handle, plus `writeSync` on its descriptor. */
class NodeFileHandle implements FileHandle {
  private readonly handle: nodeFs.FileHandle;

  constructor(handle: nodeFs.FileHandle) {
    this.handle = handle;
  }

  write(buffer: Uint8Array, offset: number, length: number, position: number | null) {
    return this.handle.write(buffer, offset, length, position);
  }

  writeSync(buffer: Uint8Array, offset: number, length: number, position: number | null) {
    return writeSync(this.handle.fd, buffer, offset, length, position);
  }

  writevSync(buffers: readonly Uint8Array[], position: number) {
    return writevSync(this.handle.fd, buffers as Uint8Array[], position);
  }

  read(buffer: Uint8Array, offset: number, length: number, position: number) {
    return this.handle.read(buffer, offset, length, position);
  }

  sync(): Promise<void> {
    return this.handle.sync();
  }

  datasync(): Promise<void> {
    return this.handle.datasync();
  }

  truncate(length: number): Promise<void> {
    return this.handle.truncate(length);
  }

  stat(): Promise<FileStats> {
    return this.handle.stat();
  }

  close(): Promise<void> {
    return this.handle.close();
  }
}

/**
 * Writes the whole buffer, before returning when the handle can (`writeSync`), else through
 * `write`: returns a promise only in that case, so a caller on a hot path awaits nothing
 * when there is nothing to wait for.
 */
export function writeAllNow(
  handle: FileHandle,
  buffer: Uint8Array,
  position: number | null,
): Promise<void> | undefined {
  if (handle.writeSync === undefined) return writeAll(handle, buffer, position);
  let offset = 0;
  while (offset < buffer.length) {
    const bytesWritten = handle.writeSync(
      buffer,
      offset,
      buffer.length - offset,
      position === null ? null : position + offset,
    );
    if (bytesWritten <= 0) throw noProgress();
    offset += bytesWritten;
  }
  return undefined;
}

/** At most this many buffers per writev(2) call (Linux's IOV_MAX is 1024). */
const MAX_BUFFERS_PER_WRITEV = 1024;

/**
 * Writes `buffers` one after another from `position`, as writeAllNow writes one buffer:
 * with `writevSync` when the handle has it (no copy into a joined buffer), else joined.
 */
export function writeAllBuffersNow(
  handle: FileHandle,
  buffers: readonly Uint8Array[],
  position: number,
): Promise<void> | undefined {
  if (handle.writevSync === undefined) return writeAllNow(handle, Buffer.concat(buffers), position);
  let index = 0;
  let at = position;
  while (index < buffers.length) {
    const group = buffers.slice(index, index + MAX_BUFFERS_PER_WRITEV);
    let expected = 0;
    for (const buffer of group) expected += buffer.length;
    const bytesWritten = handle.writevSync(group, at);
    if (bytesWritten !== expected) {
      // A short write (rare: a full disk, a signal): what is left, joined.
      if (bytesWritten <= 0) throw noProgress();
      const rest = Buffer.concat(buffers.slice(index)).subarray(bytesWritten);
      return writeAllNow(handle, rest, at + bytesWritten);
    }
    index += group.length;
    at += expected;
  }
  return undefined;
}

function noProgress(): Error {
  return Object.assign(new Error('write made no progress'), { code: 'EIO' });
}

/** Writes the whole buffer: `write` may write less than asked. */
export async function writeAll(
  handle: FileHandle,
  buffer: Uint8Array,
  position: number | null,
): Promise<void> {
  let offset = 0;
  while (offset < buffer.length) {
    const { bytesWritten } = await handle.write(
      buffer,
      offset,
      buffer.length - offset,
      position === null ? null : position + offset,
    );
    if (bytesWritten <= 0) throw noProgress();
    offset += bytesWritten;
  }
}

/** Reads up to `length` bytes from `position`, fewer at the end of the file. */
export async function readAt(
  handle: FileHandle,
  length: number,
  position: number,
): Promise<Uint8Array> {
  const buffer = new Uint8Array(length);
  let offset = 0;
  while (offset < length) {
    const { bytesRead } = await handle.read(buffer, offset, length - offset, position + offset);
    if (bytesRead === 0) break;
    offset += bytesRead;
  }
  return offset === length ? buffer : buffer.subarray(0, offset);
}
