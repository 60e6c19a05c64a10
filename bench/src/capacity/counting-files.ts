import { type FileHandle, type FileSystem, nodeFileSystem } from '@keepsake/fs';

/** Calls to count on a file handle, by the name they are reported under. */
const HANDLE_CALLS: Readonly<Record<string, string>> = {
  sync: 'fsync',
  datasync: 'fdatasync',
  write: 'write',
  writeSync: 'write',
  writevSync: 'write',
};
const FILE_SYSTEM_CALLS: Readonly<Record<string, string>> = {
  open: 'open',
  rename: 'rename',
  unlink: 'unlink',
  readFile: 'readFile',
};

/**
 * Node's file system layer with every member kept (sync stats, directory watches, the local
 * disk check: the adapter's fast paths stay on) and the calls that cost the disk counted:
 * fsync, fdatasync, write calls, opens, renames, unlinks and whole-file reads.
 */
export function countingNodeFileSystem(): { fileSystem: FileSystem; counts: Map<string, number> } {
  const counts = new Map<string, number>();
  const count = (name: string) => counts.set(name, (counts.get(name) ?? 0) + 1);
  const wrapHandle = (handle: FileHandle): FileHandle =>
    new Proxy(handle, {
      get(target, key, receiver) {
        const value = Reflect.get(target, key, receiver) as unknown;
        if (typeof value !== 'function') return value;
        const name = typeof key === 'string' ? HANDLE_CALLS[key] : undefined;
        return (...args: unknown[]) => {
          if (name !== undefined) count(name);
          return (value as (...inner: unknown[]) => unknown).apply(target, args);
        };
      },
    });
  const fileSystem = new Proxy(nodeFileSystem, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver) as unknown;
      if (typeof value !== 'function') return value;
      const name = typeof key === 'string' ? FILE_SYSTEM_CALLS[key] : undefined;
      if (key === 'open') {
        return async (...args: unknown[]) => {
          count('open');
          const handle = await (value as (...inner: unknown[]) => Promise<FileHandle>).apply(
            target,
            args,
          );
          return wrapHandle(handle);
        };
      }
      return (...args: unknown[]) => {
        if (name !== undefined) count(name);
        return (value as (...inner: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { fileSystem, counts };
}
