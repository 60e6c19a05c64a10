import { randomBytes } from 'node:crypto';
import { posix } from 'node:path';
import type { FileHandle, FileStats, FileSystem, OpenFlags } from '../file-system.js';
import {
  type DirectoryNode,
  dropUnsynced,
  type FileNode,
  fileBytes,
  type Node,
  newDirectory,
  newFile,
  newSymlink,
  type PowerLossOptions,
  truncateTo,
  writeAt,
} from './strict-memory-tree.js';

export type FileSystemOperation =
  | 'open'
  | 'read'
  | 'write'
  | 'sync'
  | 'datasync'
  | 'truncate'
  | 'fstat'
  | 'close'
  | 'rename'
  | 'unlink'
  | 'mkdir'
  | 'rmdir'
  | 'readdir'
  | 'readFile'
  | 'stat'
  | 'lstat'
  | 'symlink'
  | 'readlink';

/** Operations that change what is stored (or what survives): the points a crash can hit. */
const MUTATIONS = new Set<FileSystemOperation>([
  'open',
  'write',
  'sync',
  'datasync',
  'truncate',
  'rename',
  'unlink',
  'mkdir',
  'rmdir',
  'symlink',
]);

export interface FaultRule {
  readonly operation: FileSystemOperation;
  /** Only calls on a path containing this text (or matching this pattern). */
  readonly path?: string | RegExp;
  /** The POSIX code the call fails with: 'EIO', 'EACCES', 'ENOSPC'… */
  readonly code: string;
  /** How many calls fail. @default Infinity */
  readonly times?: number;
}

/**
 * FAULT INJECTION for tests: an in-memory filesystem that remembers what was fsynced and can
 * simulate a power loss (`simulatePowerLoss`: unsynced file data and unsynced directory
 * entries vanish), a process that dies at an exact operation (`haltAfter`), and failing calls
 * (`inject`). It counts every call by operation, so tests can assert how many fsyncs a write
 * made. One instance is one machine's disk; paths are POSIX.
 */
export class FaultInjectingFileSystem implements FileSystem {
  /** Calls made, by operation (failed and halted calls included). */
  readonly counts: Record<FileSystemOperation, number> = emptyCounts();
  private root: DirectoryNode = newDirectory(Date.now());
  private generation = 0;
  private rules: Array<FaultRule & { remaining: number }> = [];
  private mutationsLeft = Number.POSITIVE_INFINITY;
  /** Changes with every simulated power loss: what was written before is from an earlier boot. */
  private boot = randomBytes(8).toString('hex');
  private mutationCount = 0;

  /** Mutating calls made so far (the crash points `haltAfter` counts). */
  get mutations(): number {
    return this.mutationCount;
  }

  /** After `count` more mutating calls every call fails with EIO, as if the process died. */
  haltAfter(count: number): void {
    this.mutationsLeft = count;
  }

  /** Ends a halt: the next "process" may use the disk again. */
  resume(): void {
    this.mutationsLeft = Number.POSITIVE_INFINITY;
  }

  inject(rule: FaultRule): void {
    this.rules.push({ ...rule, remaining: rule.times ?? Number.POSITIVE_INFINITY });
  }

  clearFaults(): void {
    this.rules = [];
  }

  /**
   * Power loss: every byte not fsynced and every directory entry not fsynced in its directory
   * is dropped; handles opened before are dead. Ends any halt.
   */
  simulatePowerLoss(options: PowerLossOptions = {}): void {
    dropUnsynced(this.root, options);
    this.generation++;
    this.boot = randomBytes(8).toString('hex');
    this.resume();
  }

  async bootId(): Promise<string> {
    return this.boot;
  }

  /** The bytes of a file as a process sees them now (for assertions). */
  peek(path: string): Uint8Array | null {
    const node = this.lookup(path);
    return node?.kind === 'file' ? fileBytes(node).slice() : null;
  }

  /** Overwrites a file's bytes as they are now, durably too (tests corrupting storage). */
  poke(path: string, bytes: Uint8Array): void {
    const node = this.lookup(path);
    if (node?.kind !== 'file') throw this.error('ENOENT', 'poke', path);
    node.data = bytes.slice();
    node.size = bytes.length;
    node.durable = bytes.slice();
  }

  async open(path: string, flags: OpenFlags): Promise<FileHandle> {
    this.before('open', path);
    if (this.partsOf(path).length === 0) {
      if (flags !== 'r') throw this.error('EISDIR', 'open', path);
      return this.handleFor(this.root, flags, path);
    }
    const { parent, name } = this.parentOf(path, 'open');
    let node = parent.entries.get(name);
    if (flags === 'wx' && node) throw this.error('EEXIST', 'open', path);
    if (node?.kind === 'symlink') node = this.follow(node, path, 'open');
    if (!node) {
      if (flags === 'r' || flags === 'r+') throw this.error('ENOENT', 'open', path);
      node = newFile(Date.now());
      parent.entries.set(name, node);
      parent.mtimeMs = Date.now();
    }
    if (node.kind === 'directory' && flags !== 'r') throw this.error('EISDIR', 'open', path);
    return this.handleFor(node, flags, path);
  }

  async rename(from: string, to: string): Promise<void> {
    this.before('rename', from);
    const source = this.parentOf(from, 'rename');
    const node = source.parent.entries.get(source.name);
    if (!node) throw this.error('ENOENT', 'rename', from);
    const target = this.parentOf(to, 'rename');
    const existing = target.parent.entries.get(target.name);
    if (existing === node) return;
    if (existing?.kind === 'directory') {
      if (node.kind !== 'directory') throw this.error('EISDIR', 'rename', to);
      if (existing.entries.size > 0) throw this.error('ENOTEMPTY', 'rename', to);
    } else if (existing && node.kind === 'directory') {
      throw this.error('ENOTDIR', 'rename', to);
    }
    source.parent.entries.delete(source.name);
    target.parent.entries.set(target.name, node);
    source.parent.mtimeMs = target.parent.mtimeMs = Date.now();
  }

  async unlink(path: string): Promise<void> {
    this.before('unlink', path);
    const { parent, name } = this.parentOf(path, 'unlink');
    const node = parent.entries.get(name);
    if (!node) throw this.error('ENOENT', 'unlink', path);
    if (node.kind === 'directory') throw this.error('EISDIR', 'unlink', path);
    parent.entries.delete(name);
    parent.mtimeMs = Date.now();
  }

  async mkdir(path: string): Promise<string | undefined> {
    this.before('mkdir', path);
    let directory = this.root;
    let first: string | undefined;
    let current = '/';
    for (const part of this.partsOf(path)) {
      current = posix.join(current, part);
      const child = directory.entries.get(part);
      if (child && child.kind !== 'directory') throw this.error('ENOTDIR', 'mkdir', path);
      if (child) {
        directory = child;
        continue;
      }
      const created = newDirectory(Date.now());
      directory.entries.set(part, created);
      directory.mtimeMs = Date.now();
      directory = created;
      first ??= current;
    }
    return first;
  }

  async rmdir(path: string): Promise<void> {
    this.before('rmdir', path);
    const { parent, name } = this.parentOf(path, 'rmdir');
    const node = parent.entries.get(name);
    if (!node) throw this.error('ENOENT', 'rmdir', path);
    if (node.kind !== 'directory') throw this.error('ENOTDIR', 'rmdir', path);
    if (node.entries.size > 0) throw this.error('ENOTEMPTY', 'rmdir', path);
    parent.entries.delete(name);
    parent.mtimeMs = Date.now();
  }

  async readdir(path: string): Promise<string[]> {
    this.before('readdir', path);
    const node = this.resolve(path, 'readdir');
    if (node.kind !== 'directory') throw this.error('ENOTDIR', 'readdir', path);
    return [...node.entries.keys()];
  }

  async readFile(path: string): Promise<Uint8Array> {
    this.before('readFile', path);
    const node = this.followed(path, 'readFile');
    if (node.kind !== 'file') throw this.error('EISDIR', 'readFile', path);
    return Buffer.from(fileBytes(node));
  }

  async stat(path: string): Promise<FileStats> {
    this.before('stat', path);
    return statsOf(this.followed(path, 'stat'));
  }

  async lstat(path: string): Promise<FileStats> {
    this.before('lstat', path);
    return statsOf(this.resolve(path, 'lstat'));
  }

  async symlink(target: string, path: string): Promise<void> {
    this.before('symlink', path);
    const { parent, name } = this.parentOf(path, 'symlink');
    if (parent.entries.has(name)) throw this.error('EEXIST', 'symlink', path);
    parent.entries.set(name, newSymlink(target, Date.now()));
    parent.mtimeMs = Date.now();
  }

  async readlink(path: string): Promise<string> {
    this.before('readlink', path);
    const node = this.resolve(path, 'readlink');
    if (node.kind !== 'symlink') throw this.error('EINVAL', 'readlink', path);
    return node.target;
  }

  /** The node at `path`, through a final symbolic link. */
  private followed(path: string, operation: string): Node {
    const node = this.resolve(path, operation);
    return node.kind === 'symlink' ? this.follow(node, path, operation) : node;
  }

  private follow(link: Node & { kind: 'symlink' }, path: string, operation: string): Node {
    const target = this.lookup(posix.resolve(posix.dirname(path), link.target));
    if (!target || target.kind === 'symlink') throw this.error('ENOENT', operation, path);
    return target;
  }

  private handleFor(node: Node, flags: OpenFlags, path: string): FileHandle {
    const generation = this.generation;
    let closed = false;
    const check = (operation: FileSystemOperation) => {
      this.before(operation, path);
      if (closed || generation !== this.generation) throw this.error('EBADF', operation, path);
    };
    const file = (operation: FileSystemOperation): FileNode => {
      if (node.kind !== 'file') throw this.error('EISDIR', operation, path);
      return node;
    };
    // Both write calls share one model: what writeSync wrote is as unsynced as any write.
    const write = (buffer: Uint8Array, offset: number, length: number, position: number | null) => {
      check('write');
      if (flags === 'r') throw this.error('EBADF', 'write', path);
      const target = file('write');
      const at = flags === 'a+' || position === null ? target.size : position;
      writeAt(target, buffer.subarray(offset, offset + length), at, Date.now());
      return length;
    };
    return {
      write: async (buffer, offset, length, position) => ({
        bytesWritten: write(buffer, offset, length, position),
      }),
      writeSync: write,
      read: async (buffer, offset, length, position) => {
        check('read');
        const source = fileBytes(file('read'));
        const bytes = source.subarray(position, Math.min(position + length, source.length));
        buffer.set(bytes, offset);
        return { bytesRead: bytes.length };
      },
      sync: async () => {
        check('sync');
        flush(node);
      },
      datasync: async () => {
        check('datasync');
        flush(node);
      },
      truncate: async (length) => {
        check('truncate');
        truncateTo(file('truncate'), length, Date.now());
      },
      stat: async () => {
        check('fstat');
        return statsOf(node);
      },
      close: async () => {
        this.counts.close++;
        closed = true;
      },
    };
  }

  /** Counts the call, then fails it if a halt or a rule says so. */
  private before(operation: FileSystemOperation, path: string): void {
    this.counts[operation]++;
    if (MUTATIONS.has(operation)) {
      if (this.mutationsLeft <= 0) throw this.error('EIO', operation, path, 'halted');
      this.mutationsLeft--;
      this.mutationCount++;
    }
    for (const rule of this.rules) {
      if (rule.operation !== operation || rule.remaining <= 0) continue;
      if (rule.path !== undefined) {
        const matches =
          typeof rule.path === 'string' ? path.includes(rule.path) : rule.path.test(path);
        if (!matches) continue;
      }
      rule.remaining--;
      throw this.error(rule.code, operation, path, 'injected');
    }
  }

  private partsOf(path: string): string[] {
    return posix.resolve('/', path.replaceAll('\\', '/')).split('/').filter(Boolean);
  }

  private lookup(path: string): Node | null {
    let node: Node = this.root;
    for (const part of this.partsOf(path)) {
      if (node.kind !== 'directory') return null;
      const child: Node | undefined = node.entries.get(part);
      if (!child) return null;
      node = child;
    }
    return node;
  }

  private resolve(path: string, operation: string): Node {
    const node = this.lookup(path);
    if (!node) throw this.error('ENOENT', operation, path);
    return node;
  }

  private parentOf(path: string, operation: string): { parent: DirectoryNode; name: string } {
    const parts = this.partsOf(path);
    const name = parts.pop();
    const parent = this.lookup(`/${parts.join('/')}`);
    if (!name || !parent) throw this.error('ENOENT', operation, path);
    if (parent.kind !== 'directory') throw this.error('ENOTDIR', operation, path);
    return { parent, name };
  }

  private error(code: string, operation: string, path: string, why = ''): Error {
    const suffix = why ? ` (${why})` : '';
    return Object.assign(new Error(`${code}: ${operation} '${path}'${suffix}`), {
      code,
      syscall: operation,
      path,
    });
  }
}

/** A fresh fault-injecting filesystem: one simulated machine's disk. */
export function faultInjectingFileSystem(): FaultInjectingFileSystem {
  return new FaultInjectingFileSystem();
}

/** fsync(2): a directory's entries or a file's bytes now survive a power loss. */
function flush(node: Node): void {
  if (node.kind === 'directory') node.durableEntries = new Map(node.entries);
  else if (node.kind === 'file') node.durable = fileBytes(node).slice();
}

function statsOf(node: Node): FileStats {
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

function emptyCounts(): Record<FileSystemOperation, number> {
  return {
    open: 0,
    read: 0,
    write: 0,
    sync: 0,
    datasync: 0,
    truncate: 0,
    fstat: 0,
    close: 0,
    rename: 0,
    unlink: 0,
    mkdir: 0,
    rmdir: 0,
    readdir: 0,
    readFile: 0,
    stat: 0,
    lstat: 0,
    symlink: 0,
    readlink: 0,
  };
}
