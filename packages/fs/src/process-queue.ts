import type { FileSystem } from './file-system.js';

const processQueues = new WeakMap<FileSystem, Map<string, Promise<void>>>();

/**
 * Runs `action` once every action queued before it under `key` on this filesystem, in this
 * process, has finished: writers of one lock queue here first, so a process never polls a
 * lock file against itself (B4).
 */
export async function serializeInProcess<T>(
  fileSystem: FileSystem,
  key: string,
  action: () => Promise<T>,
): Promise<T> {
  let queues = processQueues.get(fileSystem);
  if (!queues) {
    queues = new Map();
    processQueues.set(fileSystem, queues);
  }
  const previous = queues.get(key) ?? Promise.resolve();
  let done!: () => void;
  const current = new Promise<void>((resolve) => {
    done = resolve;
  });
  const tail = previous.then(() => current);
  queues.set(key, tail);
  await previous;
  try {
    return await action();
  } finally {
    done();
    if (queues.get(key) === tail) queues.delete(key);
  }
}
