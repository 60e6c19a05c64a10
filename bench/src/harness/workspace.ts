import { execFile } from 'node:child_process';
import { mkdir, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * The scratch directory of one run. It lives on the repository's filesystem (bench/.tmp by
 * default), not on a tmpfs, because fsync costs are what is measured.
 */
export class Workspace {
  readonly root: string;
  private counter = 0;

  constructor(parent: string) {
    this.root = join(parent, `run-${process.pid}-${Date.now()}`);
  }

  async open(): Promise<void> {
    await mkdir(this.root, { recursive: true });
  }

  /** A new, empty directory for one trial or one contender. */
  async directory(name: string): Promise<string> {
    const path = join(this.root, `${name}-${++this.counter}`);
    await mkdir(path, { recursive: true });
    return path;
  }

  async remove(path: string): Promise<void> {
    await rm(path, { recursive: true, force: true, maxRetries: 3 });
  }

  async close(): Promise<void> {
    await this.remove(this.root);
  }
}

/**
 * Writes back everything setup left dirty in the page cache, before the clock starts. On ext4
 * (data=ordered) the first fsync of a trial would otherwise also write the setup's data, and
 * the contender that happens to run first would pay for it.
 */
export async function flushPageCache(directory: string): Promise<void> {
  try {
    await run('sync', ['-f', directory]);
  } catch {
    await run('sync');
  }
}

/** Removes scratch directories left by runs that were killed (their process is gone). */
export async function removeAbandonedRuns(parent: string): Promise<void> {
  let names: string[];
  try {
    names = await readdir(parent);
  } catch {
    return;
  }
  for (const name of names) {
    const pid = Number(/^run-(\d+)-/.exec(name)?.[1]);
    if (!Number.isInteger(pid) || isAlive(pid)) continue;
    await rm(join(parent, name), { recursive: true, force: true });
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
