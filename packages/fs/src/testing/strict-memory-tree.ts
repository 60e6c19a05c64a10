import type { FileStats } from '../file-system.js';

/**
 * The model under the fault-injecting filesystem: an in-memory tree of inodes that keeps,
 * besides what a process sees, what would survive a power loss. A file's data survives only
 * as of its last fsync/fdatasync; a directory entry (a create, a rename, an unlink) only as of
 * the last fsync of the directory that holds it. This is the strict POSIX reading that
 * write-back caches (ext4 without auto_da_alloc, XFS, NFS, FUSE/rclone) can expose, in the
 * spirit of LevelDB's FaultInjectionTestEnv and Pebble's strict MemFS.
 */
export interface FileNode {
  readonly kind: 'file';
  readonly ino: number;
  readonly birthtimeMs: number;
  mtimeMs: number;
  data: Uint8Array;
  size: number;
  /** The bytes as of the last fsync; null when never synced (a power loss empties the file). */
  durable: Uint8Array | null;
}

export interface DirectoryNode {
  readonly kind: 'directory';
  readonly ino: number;
  readonly birthtimeMs: number;
  mtimeMs: number;
  entries: Map<string, Node>;
  /** The entries as of the last fsync of this directory. */
  durableEntries: Map<string, Node>;
}

/** A symbolic link: its target is metadata, durable with its directory entry. */
export interface SymlinkNode {
  readonly kind: 'symlink';
  readonly ino: number;
  readonly birthtimeMs: number;
  mtimeMs: number;
  readonly target: string;
}

export type Node = FileNode | DirectoryNode | SymlinkNode;

let nextInode = 1;

export function newFile(now: number): FileNode {
  return {
    kind: 'file',
    ino: nextInode++,
    birthtimeMs: now,
    mtimeMs: now,
    data: new Uint8Array(0),
    size: 0,
    durable: null,
  };
}

export function newDirectory(now: number): DirectoryNode {
  return {
    kind: 'directory',
    ino: nextInode++,
    birthtimeMs: now,
    mtimeMs: now,
    entries: new Map(),
    durableEntries: new Map(),
  };
}

export function newSymlink(target: string, now: number): SymlinkNode {
  return { kind: 'symlink', ino: nextInode++, birthtimeMs: now, mtimeMs: now, target };
}

export function fileBytes(file: FileNode): Uint8Array {
  return file.data.subarray(0, file.size);
}

/** Writes `bytes` at `position`, growing the file (with zeros) as needed. */
export function writeAt(file: FileNode, bytes: Uint8Array, position: number, now: number): void {
  const end = position + bytes.length;
  if (end > file.data.length) {
    const grown = new Uint8Array(Math.max(end, file.data.length * 2, 64));
    grown.set(file.data.subarray(0, file.size));
    file.data = grown;
  }
  if (position > file.size) file.data.fill(0, file.size, position);
  file.data.set(bytes, position);
  file.size = Math.max(file.size, end);
  file.mtimeMs = now;
}

export function truncateTo(file: FileNode, length: number, now: number): void {
  if (length > file.size) {
    writeAt(file, new Uint8Array(length - file.size), file.size, now);
  } else {
    file.size = length;
  }
  file.mtimeMs = now;
}

/** fsync(2): a directory's entries or a file's bytes now survive a power loss. */
export function flush(node: Node): void {
  if (node.kind === 'directory') node.durableEntries = new Map(node.entries);
  else if (node.kind === 'file') node.durable = fileBytes(node).slice();
}

export function statsOf(node: Node): FileStats {
  const size =
    node.kind === 'file' ? node.size : node.kind === 'symlink' ? node.target.length : 4096;
  return {
    size,
    mtimeMs: node.mtimeMs,
    ino: node.ino,
    birthtimeMs: node.birthtimeMs,
    isDirectory: () => node.kind === 'directory',
    isFile: () => node.kind === 'file',
    isSymbolicLink: () => node.kind === 'symlink',
  };
}

export interface PowerLossOptions {
  /**
   * Keep a random part of the bytes appended since a file's last fsync, as a disk may have
   * written some pages back before the power went: torn tails, never reordered bytes.
   * @default false (every unsynced byte is lost)
   */
  readonly tornTails?: boolean;
  /** Random source for `tornTails`, for reproducible runs. @default Math.random */
  readonly random?: () => number;
}

/**
 * Replaces the volatile state by the durable one, from `root` down: directories get their
 * synced entries back, files their synced bytes; whatever no synced entry reaches is gone.
 */
export function dropUnsynced(root: DirectoryNode, options: PowerLossOptions = {}): void {
  const random = options.random ?? Math.random;
  const visited = new Set<Node>();
  const visit = (node: Node) => {
    if (visited.has(node)) return;
    visited.add(node);
    if (node.kind === 'directory') {
      node.entries = new Map(node.durableEntries);
      for (const child of node.entries.values()) visit(child);
      return;
    }
    if (node.kind === 'symlink') return;
    const durable = node.durable ?? new Uint8Array(0);
    let kept = durable;
    const current = fileBytes(node);
    if (options.tornTails && current.length > durable.length && startsWith(current, durable)) {
      const extra = Math.floor(random() * (current.length - durable.length + 1));
      kept = current.slice(0, durable.length + extra);
    }
    node.data = kept.slice();
    node.size = kept.length;
  };
  visit(root);
}

function startsWith(bytes: Uint8Array, prefix: Uint8Array): boolean {
  if (prefix.length > bytes.length) return false;
  for (let index = 0; index < prefix.length; index++) {
    if (bytes[index] !== prefix[index]) return false;
  }
  return true;
}
