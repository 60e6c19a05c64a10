import { randomBytes } from 'node:crypto';
import { posix } from 'node:path';
import type { FileHandle, FileStats, FileSystem, OpenFlags } from '../file-system.js';
import {
  emptyCounts,
  type FileSystemOperation,
  fileSystemError,
  MUTATIONS,
} from './file-system-calls.js';
import { memoryFileHandle } from './memory-file-handle.js';
import {
  followed,
  followLink,
  lookup,
  parentOf,
  partsOf,
  resolveNode,
} from './memory-tree-paths.js';
import {
  type DirectoryNode,
  dropUnsynced,
  fileBytes,
  type Node,
  newDirectory,
  newFile,
  newSymlink,
  type PowerLossOptions,
  statsOf,
} from './strict-memory-tree.js';

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

  /** In memory, so a synchronous call never waits for anything. */
  async isLocalDisk(): Promise<boolean> {
    return true;
  }

  /** The bytes of a file as a process sees them now (for assertions). */
  peek(path: string): Uint8Array | null {
    const node = lookup(this.root, path);
    return node?.kind === 'file' ? fileBytes(node).slice() : null;
  }

  /** Overwrites a file's bytes as they are now, durably too (tests corrupting storage). */
  poke(path: string, bytes: Uint8Array): void {
    const node = lookup(this.root, path);
    if (node?.kind !== 'file') throw fileSystemError('ENOENT', 'poke', path);
    node.data = bytes.slice();
    node.size = bytes.length;
    node.durable = bytes.slice();
  }

  async open(path: string, flags: OpenFlags): Promise<FileHandle> {
    this.before('open', path);
    if (partsOf(path).length === 0) {
      if (flags !== 'r') throw fileSystemError('EISDIR', 'open', path);
      return this.handleFor(this.root, flags, path);
    }
    const { parent, name } = parentOf(this.root, path, 'open');
    let node = parent.entries.get(name);
    if (flags === 'wx' && node) throw fileSystemError('EEXIST', 'open', path);
    if (node?.kind === 'symlink') node = followLink(this.root, node, path, 'open');
    if (!node) {
      if (flags === 'r' || flags === 'r+') throw fileSystemError('ENOENT', 'open', path);
      node = newFile(Date.now());
      parent.entries.set(name, node);
      parent.mtimeMs = Date.now();
    }
    if (node.kind === 'directory' && flags !== 'r') throw fileSystemError('EISDIR', 'open', path);
    return this.handleFor(node, flags, path);
  }

  async rename(from: string, to: string): Promise<void> {
    this.before('rename', from);
    const source = parentOf(this.root, from, 'rename');
    const node = source.parent.entries.get(source.name);
    if (!node) throw fileSystemError('ENOENT', 'rename', from);
    const target = parentOf(this.root, to, 'rename');
    const existing = target.parent.entries.get(target.name);
    if (existing === node) return;
    if (existing?.kind === 'directory') {
      if (node.kind !== 'directory') throw fileSystemError('EISDIR', 'rename', to);
      if (existing.entries.size > 0) throw fileSystemError('ENOTEMPTY', 'rename', to);
    } else if (existing && node.kind === 'directory') {
      throw fileSystemError('ENOTDIR', 'rename', to);
    }
    source.parent.entries.delete(source.name);
    target.parent.entries.set(target.name, node);
    source.parent.mtimeMs = target.parent.mtimeMs = Date.now();
  }

  async unlink(path: string): Promise<void> {
    this.before('unlink', path);
    const { parent, name } = parentOf(this.root, path, 'unlink');
    const node = parent.entries.get(name);
    if (!node) throw fileSystemError('ENOENT', 'unlink', path);
    if (node.kind === 'directory') throw fileSystemError('EISDIR', 'unlink', path);
    parent.entries.delete(name);
    parent.mtimeMs = Date.now();
  }

  async mkdir(path: string): Promise<string | undefined> {
    this.before('mkdir', path);
    let directory = this.root;
    let first: string | undefined;
    let current = '/';
    for (const part of partsOf(path)) {
      current = posix.join(current, part);
      const child = directory.entries.get(part);
      if (child && child.kind !== 'directory') throw fileSystemError('ENOTDIR', 'mkdir', path);
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
    const { parent, name } = parentOf(this.root, path, 'rmdir');
    const node = parent.entries.get(name);
    if (!node) throw fileSystemError('ENOENT', 'rmdir', path);
    if (node.kind !== 'directory') throw fileSystemError('ENOTDIR', 'rmdir', path);
    if (node.entries.size > 0) throw fileSystemError('ENOTEMPTY', 'rmdir', path);
    parent.entries.delete(name);
    parent.mtimeMs = Date.now();
  }

  async readdir(path: string): Promise<string[]> {
    return this.readdirSync(path);
  }

  /** Counted, halted and failed as `readdir` is. */
  readdirSync(path: string): string[] {
    this.before('readdir', path);
    const node = resolveNode(this.root, path, 'readdir');
    if (node.kind !== 'directory') throw fileSystemError('ENOTDIR', 'readdir', path);
    return [...node.entries.keys()];
  }

  async readFile(path: string): Promise<Uint8Array> {
    this.before('readFile', path);
    const node = followed(this.root, path, 'readFile');
    if (node.kind !== 'file') throw fileSystemError('EISDIR', 'readFile', path);
    return Buffer.from(fileBytes(node));
  }

  async stat(path: string): Promise<FileStats> {
    return this.statSync(path);
  }

  /** Counted, halted and failed as `stat` is. */
  statSync(path: string): FileStats {
    this.before('stat', path);
    return statsOf(followed(this.root, path, 'stat'));
  }

  async lstat(path: string): Promise<FileStats> {
    return this.lstatSync(path);
  }

  /** Counted, halted and failed as `lstat` is. */
  lstatSync(path: string): FileStats {
    this.before('lstat', path);
    return statsOf(resolveNode(this.root, path, 'lstat'));
  }

  async symlink(target: string, path: string): Promise<void> {
    this.before('symlink', path);
    const { parent, name } = parentOf(this.root, path, 'symlink');
    if (parent.entries.has(name)) throw fileSystemError('EEXIST', 'symlink', path);
    parent.entries.set(name, newSymlink(target, Date.now()));
    parent.mtimeMs = Date.now();
  }

  async readlink(path: string): Promise<string> {
    this.before('readlink', path);
    const node = resolveNode(this.root, path, 'readlink');
    if (node.kind !== 'symlink') throw fileSystemError('EINVAL', 'readlink', path);
    return node.target;
  }

  private handleFor(node: Node, flags: OpenFlags, path: string): FileHandle {
    return memoryFileHandle(node, flags, path, {
      before: (operation) => this.before(operation, path),
      generation: () => this.generation,
      countClose: () => {
        this.counts.close++;
      },
    });
  }

  /** Counts the call, then fails it if a halt or a rule says so. */
  private before(operation: FileSystemOperation, path: string): void {
    this.counts[operation]++;
    if (MUTATIONS.has(operation)) {
      if (this.mutationsLeft <= 0) throw fileSystemError('EIO', operation, path, 'halted');
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
      throw fileSystemError(rule.code, operation, path, 'injected');
    }
  }
}

/** A fresh fault-injecting filesystem: one simulated machine's disk. */
export function faultInjectingFileSystem(): FaultInjectingFileSystem {
  return new FaultInjectingFileSystem();
}
