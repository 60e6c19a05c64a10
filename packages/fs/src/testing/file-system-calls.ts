/**
 * The calls the fault-injecting filesystem counts and can fail, and the errors it fails them
 * with: shaped like Node's (`code`, `syscall`, `path`), since the adapter branches on codes.
 */
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
export const MUTATIONS = new Set<FileSystemOperation>([
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

export function emptyCounts(): Record<FileSystemOperation, number> {
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

export function fileSystemError(code: string, operation: string, path: string, why = ''): Error {
  const suffix = why ? ` (${why})` : '';
  return Object.assign(new Error(`${code}: ${operation} '${path}'${suffix}`), {
    code,
    syscall: operation,
    path,
  });
}
