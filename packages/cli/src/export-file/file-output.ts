import { type FileHandle, open, rename, unlink } from 'node:fs/promises';
import { TargetNotEmptyError } from '../cli-errors.js';
import type { OutputStream } from '../cli-io.js';

const FLUSH_BYTES = 1 << 20;

/**
 * Collects small writes (one export line each) into large ones: a write per line would cost
 * a system call, or a stream callback, per journal record.
 */
export class BufferedOutput implements OutputStream {
  readonly isTTY = false;
  readonly stream = null;
  private chunks: string[] = [];
  private size = 0;

  private readonly inner: { write(text: string): Promise<void> };

  constructor(inner: { write(text: string): Promise<void> }) {
    this.inner = inner;
  }

  async write(text: string): Promise<void> {
    this.chunks.push(text);
    this.size += text.length;
    if (this.size >= FLUSH_BYTES) await this.flush();
  }

  async flush(): Promise<void> {
    if (this.size === 0) return;
    const text = this.chunks.join('');
    this.chunks = [];
    this.size = 0;
    await this.inner.write(text);
  }
}

/**
 * An export file written under a temporary name and renamed into place once complete and
 * fsynced: an export that dies half-way never leaves a file under the name asked for, and an
 * existing file is never overwritten.
 */
export class ExportFile {
  readonly path: string;
  private readonly partialPath: string;
  private readonly handle: FileHandle;

  private constructor(path: string, partialPath: string, handle: FileHandle) {
    this.path = path;
    this.partialPath = partialPath;
    this.handle = handle;
  }

  static async create(path: string): Promise<ExportFile> {
    const exists = await open(path, 'r').then(
      async (handle) => {
        await handle.close();
        return true;
      },
      () => false,
    );
    if (exists) throw new TargetNotEmptyError(`${path} exists; an export never overwrites a file`);
    const partialPath = `${path}.partial`;
    // A `.partial` left by an export that died is the only thing replaced ('w', not 'wx').
    const handle = await open(partialPath, 'w');
    return new ExportFile(path, partialPath, handle);
  }

  async write(text: string): Promise<void> {
    await this.handle.write(text);
  }

  async complete(): Promise<void> {
    await this.handle.sync();
    await this.handle.close();
    await rename(this.partialPath, this.path);
  }

  async abandon(): Promise<void> {
    await this.handle.close().catch(() => undefined);
    await unlink(this.partialPath).catch(() => undefined);
  }
}
