import { type FileHandle, open } from 'node:fs/promises';

async function writeAll(handle: FileHandle, bytes: Uint8Array): Promise<void> {
  let offset = 0;
  while (offset < bytes.length) {
    const { bytesWritten } = await handle.write(bytes, offset, bytes.length - offset);
    offset += bytesWritten;
  }
}

function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

interface Waiting {
  readonly bytes: Uint8Array;
  resolve(): void;
  reject(error: unknown): void;
}

/**
 * The raw group-commit loop: every stream appends to one shared log; whatever is queued
 * while a flush runs becomes the next batch, written with one write and made durable with
 * one fdatasync, and each append resolves once its batch is durable. This is what a
 * database's write-ahead log does, with nothing else around it: no framing, no checksum,
 * no locks, no per-stream files.
 */
export class GroupCommitLog {
  private readonly handle: FileHandle;
  private queue: Waiting[] = [];
  private flushing = false;
  /** Number of fdatasync calls, to report the batch size reached. */
  flushes = 0;

  private constructor(handle: FileHandle) {
    this.handle = handle;
  }

  static async open(path: string): Promise<GroupCommitLog> {
    return new GroupCommitLog(await open(path, 'a'));
  }

  append(bytes: Uint8Array): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ bytes, resolve, reject });
      if (!this.flushing) void this.pump();
    });
  }

  async close(): Promise<void> {
    await this.handle.close();
  }

  private async pump(): Promise<void> {
    this.flushing = true;
    // Let every stream that is ready to append join the batch first: the streams whose
    // appends just became durable resume in the turn after their promises resolve.
    await yieldToEventLoop();
    while (this.queue.length > 0) {
      const batch = this.queue;
      this.queue = [];
      try {
        await writeAll(this.handle, Buffer.concat(batch.map((waiting) => waiting.bytes)));
        await this.handle.datasync();
        this.flushes++;
        for (const waiting of batch) waiting.resolve();
      } catch (error) {
        for (const waiting of batch) waiting.reject(error);
      }
      await yieldToEventLoop();
    }
    this.flushing = false;
  }
}

/**
 * One fdatasync per append: each stream appends to its own file (as each run has its own
 * journal) and makes every record durable before the next.
 */
export class SyncEachLog {
  private readonly handle: FileHandle;

  private constructor(handle: FileHandle) {
    this.handle = handle;
  }

  static async open(path: string): Promise<SyncEachLog> {
    return new SyncEachLog(await open(path, 'a'));
  }

  async append(bytes: Uint8Array): Promise<void> {
    await writeAll(this.handle, bytes);
    await this.handle.datasync();
  }

  async close(): Promise<void> {
    await this.handle.close();
  }
}
