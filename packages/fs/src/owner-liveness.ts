import { randomBytes } from 'node:crypto';
import type { AdapterLiveness, OwnerState } from '@keepsake/core';
import { currentBootId } from './boot.js';
import type { FileSystem } from './file-system.js';
import { holdToken, isOwnerAlive, releaseToken, thisHost } from './lock-owner.js';

/**
 * F1, E9: whether the fs adapter that began a run is alive, answered the way stale locks are
 * (lock-owner.ts): the run records its owner's host, boot, process id and a token the adapter
 * holds while open. On the same host in the same boot the process is asked directly (a
 * signal 0), so the answer never rests on the owner renewing anything: an owner whose event
 * loop stalls for minutes is alive, one that was SIGKILLed is gone at once. Another boot of
 * this host is gone; another host cannot be asked (unknown: the grace decides, F1).
 */
export class OwnerLiveness implements AdapterLiveness {
  private readonly token = randomBytes(8).toString('hex');
  private boot = '';
  private bootKnown = false;
  private readonly fileSystem: FileSystem;

  constructor(fileSystem: FileSystem) {
    this.fileSystem = fileSystem;
    holdToken(this.token);
  }

  get ownerId(): string {
    return JSON.stringify({ host: thisHost, boot: this.boot, pid: process.pid, token: this.token });
  }

  /** Learns the machine's boot id (at open, or at the first question before it). */
  async learnBoot(): Promise<void> {
    if (this.bootKnown) return;
    this.boot = (await currentBootId(this.fileSystem)) ?? '';
    this.bootKnown = true;
  }

  /** The adapter closed: runs it began now count as their owner's gone. */
  release(): void {
    releaseToken(this.token);
  }

  async ownerState(ownerId: string): Promise<OwnerState> {
    const owner = parseOwner(ownerId);
    if (owner === null || owner.host !== thisHost) return 'unknown';
    await this.learnBoot();
    if (owner.boot !== '' && this.boot !== '' && owner.boot !== this.boot) return 'gone';
    return isOwnerAlive(owner.pid, owner.token) ? 'alive' : 'gone';
  }
}

function parseOwner(
  ownerId: string,
): { host: string; boot: string; pid: number; token: string } | null {
  let value: unknown;
  try {
    value = JSON.parse(ownerId);
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null) return null;
  const { host, boot, pid, token } = value as Record<string, unknown>;
  if (typeof host !== 'string' || typeof boot !== 'string' || typeof token !== 'string') {
    return null;
  }
  if (typeof pid !== 'number' || !Number.isSafeInteger(pid) || pid <= 0) return null;
  return { host, boot, pid, token };
}
