import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type FileHandle, nodeFileSystem, writeAllBuffersNow } from '../src/file-system.js';

const directories: string[] = [];

afterEach(async () => {
  for (const directory of directories.splice(0)) await rm(directory, { recursive: true });
});

async function openFile(): Promise<{ handle: FileHandle; path: string }> {
  const directory = await mkdtemp(join(tmpdir(), 'keepsake-writev-'));
  directories.push(directory);
  const path = join(directory, 'log');
  return { handle: await nodeFileSystem.open(path, 'a+'), path };
}

function buffers(count: number): Buffer[] {
  return Array.from({ length: count }, (_, index) => Buffer.from(`entry ${index};`));
}

describe('writing a flush of several buffers', () => {
  it('E2: more buffers than one writev takes land whole and in order, at the position', async () => {
    const { handle, path } = await openFile();
    const entries = buffers(2_500);
    await handle.write(Buffer.from('head|'), 0, 5, 0);
    expect(writeAllBuffersNow(handle, entries, 5)).toBeUndefined();
    await handle.close();
    expect(await readFile(path, 'utf8')).toBe(`head|${Buffer.concat(entries).toString()}`);
  });

  it('E2: a short writev is finished, nothing lost or doubled (fault injection)', async () => {
    const { handle, path } = await openFile();
    const real = handle.writevSync?.bind(handle);
    let calls = 0;
    // Fault injection: the first writev writes only 7 bytes, as a signal or a full disk may.
    const shortOnce: FileHandle = Object.assign(Object.create(handle) as FileHandle, {
      writevSync: (list: readonly Uint8Array[], position: number) => {
        calls++;
        if (calls > 1) return real?.(list, position) as number;
        return handle.writeSync?.(list[0] as Uint8Array, 0, 7, position) as number;
      },
    });
    const entries = buffers(10);
    const written = writeAllBuffersNow(shortOnce, entries, 0);
    if (written !== undefined) await written;
    await handle.close();
    expect(await readFile(path, 'utf8')).toBe(Buffer.concat(entries).toString());
  });

  it('E2: without writevSync the buffers are joined and written as one', async () => {
    const { handle, path } = await openFile();
    const withoutWritev: FileHandle = Object.assign(Object.create(handle) as FileHandle, {
      writevSync: undefined,
    });
    const entries = buffers(3);
    const written = writeAllBuffersNow(withoutWritev, entries, 0);
    if (written !== undefined) await written;
    await handle.close();
    expect(await readFile(path, 'utf8')).toBe(Buffer.concat(entries).toString());
  });
});
