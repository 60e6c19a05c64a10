import type { FileHandle, OpenFlags } from '../file-system.js';
import { type FileSystemOperation, fileSystemError } from './file-system-calls.js';
import {
  type FileNode,
  fileBytes,
  flush,
  type Node,
  statsOf,
  truncateTo,
  writeAt,
} from './strict-memory-tree.js';

/** What a handle needs from the fault-injecting filesystem that opened it. */
export interface HandleOwner {
  /** Counts the call, then fails it if a halt or a rule says so. */
  before(operation: FileSystemOperation): void;
  /** Changes with every simulated power loss: handles opened before are dead. */
  generation(): number;
  /** Counts a close (which never fails). */
  countClose(): void;
}

/** A handle on `node` of the strict memory tree, opened at `path` with `flags`. */
export function memoryFileHandle(
  node: Node,
  flags: OpenFlags,
  path: string,
  owner: HandleOwner,
): FileHandle {
  const generation = owner.generation();
  let closed = false;
  const check = (operation: FileSystemOperation) => {
    owner.before(operation);
    if (closed || generation !== owner.generation()) {
      throw fileSystemError('EBADF', operation, path);
    }
  };
  const file = (operation: FileSystemOperation): FileNode => {
    if (node.kind !== 'file') throw fileSystemError('EISDIR', operation, path);
    return node;
  };
  // The write calls share one model: what writeSync wrote is as unsynced as any write.
  const write = (buffer: Uint8Array, offset: number, length: number, position: number | null) => {
    check('write');
    if (flags === 'r') throw fileSystemError('EBADF', 'write', path);
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
    // One call (one fault-injection check), as writev(2) is one system call.
    writevSync: (buffers, position) => {
      const joined = Buffer.concat(buffers);
      return write(joined, 0, joined.length, position);
    },
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
      owner.countClose();
      closed = true;
    },
  };
}
