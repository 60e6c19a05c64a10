import { randomBytes } from 'node:crypto';
import type { AdapterLiveness, OwnerState } from '@keepsake/core';
import { masters, type RedisClient } from './connection.js';

const OWNER_PREFIX = 'keepsake-owner:';

/**
 * F1, E9: whether the Redis adapter that began a run is alive, asked of the server itself.
 * Every connection an adapter makes carries its owner name (`CLIENT SETNAME`, set again on
 * each reconnect), and Redis forgets a client the moment its connection closes, which a
 * killed process's kernel does at once. So an owner whose name is on no master's client
 * list is gone; one whose event loop is stalled keeps its connections and stays alive
 * (nothing is renewed from the event loop). A live owner may be missing briefly while it
 * reconnects: it counts as gone only after missing for `confirmMs` without a break, and
 * until then the answer is `unknown` (the grace decides). A server that refuses
 * `CLIENT LIST` (an ACL without it) answers `unknown` too.
 */
export class RedisOwnerLiveness implements AdapterLiveness {
  /** This adapter's connection name, which is also its owner id. */
  readonly ownerId = `${OWNER_PREFIX}${randomBytes(12).toString('hex')}`;
  /** When each owner was first seen missing (real time), until seen again. */
  private readonly missingSince = new Map<string, number>();

  private readonly client: () => RedisClient;
  private readonly confirmMs: number;
  private readonly now: () => number;

  constructor(client: () => RedisClient, confirmMs: number, now: () => number = Date.now) {
    this.client = client;
    this.confirmMs = confirmMs;
    this.now = now;
  }

  async ownerState(ownerId: string): Promise<OwnerState> {
    if (ownerId === this.ownerId) return 'alive';
    if (!ownerId.startsWith(OWNER_PREFIX) || /\s/.test(ownerId)) return 'unknown';
    let present: boolean;
    try {
      present = await this.isConnected(ownerId);
    } catch {
      return 'unknown';
    }
    if (present) {
      this.missingSince.delete(ownerId);
      return 'alive';
    }
    const now = this.now();
    const since = this.missingSince.get(ownerId) ?? now;
    this.missingSince.set(ownerId, since);
    return now - since >= this.confirmMs ? 'gone' : 'unknown';
  }

  /** Whether any master lists a client of that name (one CLIENT LIST per master). */
  private async isConnected(ownerId: string): Promise<boolean> {
    const needle = ` name=${ownerId} `;
    const lists = await Promise.all(
      masters(this.client()).map(
        (node) => node.call('CLIENT', 'LIST', 'TYPE', 'normal') as Promise<string>,
      ),
    );
    return lists.some((list) => list.split('\n').some((line) => ` ${line} `.includes(needle)));
  }
}
