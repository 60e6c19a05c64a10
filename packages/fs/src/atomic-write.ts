import { randomBytes } from 'node:crypto';
import { BackendError } from '@keepsake/core';
import { isSharingViolationErrno } from './errno-table.js';
import { ADAPTER_NAME, errorCode, toBackendError } from './errors.js';
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
  /** B2: retry a rename that meets a sharing violation (the adapter's option of that name). */
  readonly retrySharingViolations: boolean;
  /**
   * Called once the rename landed: from then on readers see the new file, whatever fails
   * after (B7: an index entry written with a document waits for this).
   */
  readonly onRenamed?: () => void;
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
    await renameWithRetry(fileSystem, tempPath, target, options.retrySharingViolations);
  } catch (error) {
    if (handle) await handle.close().catch(() => undefined);
    await fileSystem.unlink(tempPath).catch(() => undefined);
    throw toBackendError(error, `write ${target}`);
  }
  options.onRenamed?.();
}

/** Attempts a rename gets when each meets a sharing violation (4 retries, ~300 ms). */
export const RENAME_ATTEMPTS = 5;

/**
 * B2: a rename over a file another process has open (an antivirus or indexer, another
 * reader) fails on Windows with a transient sharing violation (EPERM, EACCES or EBUSY); with
 * `retrySharingViolations` it gets a bounded number of retries, with backoff. Without it
 * (the default off Windows) those codes are what they say, and no error is ever retried.
 *
 * A violation that outlasts the retries is reported as what it is: a `BackendError` that is
 * retryable (the other process may let go of the file), saying how long it was tried.
 */
export async function renameWithRetry(
  fileSystem: FileSystem,
  from: string,
  to: string,
  retrySharingViolations: boolean,
): Promise<void> {
  let waitedMs = 0;
  for (let attempt = 1; ; attempt++) {
    try {
      await fileSystem.rename(from, to);
      return;
    } catch (error) {
      const code = errorCode(error);
      if (!retrySharingViolations || !isSharingViolationErrno(code)) throw error;
      if (attempt >= RENAME_ATTEMPTS) {
        throw new BackendError(
          ADAPTER_NAME,
          `rename ${from} to ${to}: a sharing violation (${code}) lasted through ${attempt} attempts over ${waitedMs} ms; another process has the file open`,
          { cause: error, isRetryable: true },
        );
      }
      const delayMs = 10 * 2 ** attempt;
      waitedMs += delayMs;
      await new Promise((resolve) => setTimeout(resolve, delayMs));
    }
  }
}
