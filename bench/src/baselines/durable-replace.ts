import { open, rename, unlink } from 'node:fs/promises';
import { dirname } from 'node:path';

let tempCounter = 0;

/**
 * The hand-written durable replace, done competently: write a unique temp file, fsync it,
 * close it, rename it over the target, then fsync the directory so the rename itself
 * survives power loss. Two fsyncs per save, the least a durable replace can cost.
 */
export async function durableReplace(path: string, data: string | Uint8Array): Promise<void> {
  const temp = `${path}.${process.pid}.${++tempCounter}.tmp`;
  const handle = await open(temp, 'wx');
  try {
    await handle.writeFile(data);
    await handle.sync();
  } catch (error) {
    await handle.close();
    await unlink(temp).catch(() => undefined);
    throw error;
  }
  await handle.close();
  await rename(temp, path);
  await syncDirectory(dirname(path));
}

export async function syncDirectory(directory: string): Promise<void> {
  const handle = await open(directory, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
