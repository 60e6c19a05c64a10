import type { FileStats, FileSystem } from '../file-system.js';

/** The path-level reads a pause can hold back. */
export type PausableOperation = 'readFile' | 'readdir' | 'readlink';

/** One held-back call: it has done its work and waits for `resume()` to return its result. */
export interface Pause {
  /** Resolves once a matching call has done its work (its result is fixed) and waits. */
  readonly reached: Promise<void>;
  /** Lets the held call return what it read when it ran. */
  resume(): void;
}

/**
 * FAULT INJECTION (timing) for tests: a pass-through over another filesystem layer whose next
 * call of an operation on a matching path does its work, then waits for the test before it
 * returns. A test forces an interleaving that otherwise happens only by chance: a read whose
 * bytes are taken, then everything else the adapter does meanwhile (a journal applier writing
 * and forgetting frames), then the read going on with what it took.
 */
export function pausingFileSystem(inner: FileSystem): {
  fileSystem: FileSystem;
  pauseAfter(operation: PausableOperation, path: string | RegExp): Pause;
} {
  const pauses: Array<{
    operation: PausableOperation;
    path: string | RegExp;
    arrive(): void;
    released: Promise<void>;
  }> = [];

  const held = async <T>(operation: PausableOperation, path: string, result: T): Promise<T> => {
    const index = pauses.findIndex(
      (pause) =>
        pause.operation === operation &&
        (typeof pause.path === 'string' ? path.includes(pause.path) : pause.path.test(path)),
    );
    if (index === -1) return result;
    const [pause] = pauses.splice(index, 1);
    pause?.arrive();
    await pause?.released;
    return result;
  };

  // Every method bound to `inner` (a class instance's methods are not own properties).
  const fileSystem: FileSystem = {
    open: (path, flags) => inner.open(path, flags),
    rename: (from, to) => inner.rename(from, to),
    unlink: (path) => inner.unlink(path),
    mkdir: (path) => inner.mkdir(path),
    rmdir: (path) => inner.rmdir(path),
    stat: (path) => inner.stat(path),
    ...(inner.statSync ? { statSync: (path: string) => inner.statSync?.(path) as FileStats } : {}),
    lstat: (path) => inner.lstat(path),
    ...(inner.lstatSync
      ? { lstatSync: (path: string) => inner.lstatSync?.(path) as FileStats }
      : {}),
    symlink: (target, path) => inner.symlink(target, path),
    ...(inner.bootId ? { bootId: () => inner.bootId?.() ?? Promise.resolve(null) } : {}),
    ...(inner.isLocalDisk
      ? { isLocalDisk: (path: string) => inner.isLocalDisk?.(path) ?? Promise.resolve(false) }
      : {}),
    readFile: async (path) => held('readFile', path, await inner.readFile(path)),
    readdir: async (path) => held('readdir', path, await inner.readdir(path)),
    readlink: async (path) => held('readlink', path, await inner.readlink(path)),
  };

  return {
    fileSystem,
    pauseAfter(operation, path) {
      let arrive!: () => void;
      let resume!: () => void;
      const reached = new Promise<void>((resolve) => {
        arrive = resolve;
      });
      const released = new Promise<void>((resolve) => {
        resume = resolve;
      });
      pauses.push({ operation, path, arrive, released });
      return { reached, resume };
    },
  };
}
