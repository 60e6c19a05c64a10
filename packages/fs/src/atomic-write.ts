import { randomBytes } from 'node:crypto';
import { errorCode, toBackendError } from './errors.js';
import { type FileHandle, type FileSystem, writeAll } from './file-system.js';

/** Temp files end with this suffix; the sweep on open (B2) removes old ones. */
export const TEMP_SUFFIX = '.tmp';

let tempCounter = 0;

/**
 * B2: a temp name no other writer can hold: the target's name, this process id, 6 random
 * bytes and a per-process counter. It is also created exclusively (`wx`), so even a
 * collision could never share one temp file between two writers.
 */
export function tempPathFor(target: string): string {
  tempCounter = (tempCounter + 1) % Number.MAX_SAFE_INTEGER;
  const random = randomBytes(6).toString('hex');
  return `${target}.${process.pid}-${random}-${tempCounter}${TEMP_SUFFIX}`;
}

export interface AtomicWriteOptions {
  /** fsync the temp file before the rename (B3). The caller fsyncs the directory. */
  readonly durable: boolean;
}

/**
 * B1–B3: writes `bytes` to a unique temp file in the target's directory, fsyncs it when
 * durable, and renames it over the target, so a reader sees the old or the new file, never
 * a mix, and a SIGKILL at any instant leaves at most a stray temp. A failed write removes
 * its temp file and is never reported as done.
 */
export async function writeFileAtomic(
  fileSystem: FileSystem,
  target: string,
  bytes: Uint8Array,
  options: AtomicWriteOptions,
): Promise<void> {
  const tempPath = tempPathFor(target);
  let handle: FileHandle | null = null;
  try {
    handle = await fileSystem.open(tempPath, 'wx');
    await writeAll(handle, bytes, 0);
    if (options.durable) await handle.sync();
    const closing = handle;
    handle = null;
    await closing.close();
    await renameWithRetry(fileSystem, tempPath, target);
  } catch (error) {
    if (handle) await handle.close().catch(() => undefined);
    await fileSystem.unlink(tempPath).catch(() => undefined);
    throw toBackendError(error, `write ${target}`);
  }
}

const RENAME_ATTEMPTS = 5;

/**
 * B2: on Windows a rename over a file another process has open fails with a transient
 * sharing violation (EPERM, EACCES, EBUSY); it gets a bounded number of retries. Everywhere
 * else those codes are real permission errors, and no error is ever retried.
 */
export async function renameWithRetry(
  fileSystem: FileSystem,
  from: string,
  to: string,
  platform: NodeJS.Platform = process.platform,
): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await fileSystem.rename(from, to);
      return;
    } catch (error) {
      const code = errorCode(error);
      const transient = code === 'EPERM' || code === 'EACCES' || code === 'EBUSY';
      if (platform !== 'win32' || !transient || attempt >= RENAME_ATTEMPTS) throw error;
      await new Promise((resolve) => setTimeout(resolve, 10 * 2 ** attempt));
    }
  }
}
