import { uptime } from 'node:os';
import type { FileSystem } from './file-system.js';

/**
 * Whether something a process wrote (a lock file, a group-commit log) predates this boot
 * of the machine, so that its process is certainly gone. With a boot id (Linux, the
 * fault-injecting filesystem) the ids are compared; without one, its creation time is
 * compared with the boot time, with a minute of slack for clock adjustments.
 */
export interface BootStamp {
  readonly boot?: string | null;
  readonly createdAt: number;
}

export async function currentBootId(fileSystem: FileSystem): Promise<string | null> {
  return (await fileSystem.bootId?.()) ?? null;
}

export function isFromEarlierBoot(stamp: BootStamp, bootId: string | null): boolean {
  if (bootId !== null && typeof stamp.boot === 'string') return stamp.boot !== bootId;
  const bootedAt = Date.now() - uptime() * 1000;
  return stamp.createdAt < bootedAt - 60_000;
}
