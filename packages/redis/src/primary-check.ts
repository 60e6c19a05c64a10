import type { Redis } from 'ioredis';
import type { RedisClient } from './connection.js';
import { planDurability } from './durability-plan.js';
import { probeServer } from './durability-probe.js';
import { RedisDurabilityError, toKeepsakeError } from './errors.js';
import type { RedisDurability } from './options.js';
import type { ScriptRunner } from './script-runner.js';

type Stream = Redis['stream'];

/**
 * B3 across a Sentinel failover: a connection that follows a failover lands on another
 * server, which may confirm less than the one probed at `open()` (no AOF, `appendfsync
 * everysec` on Redis 7.0, fewer replicas). So every connection's socket is remembered once
 * its server has been probed, and a write first checks that each connection is still on
 * that socket; one that is not (it reconnected) has its server probed again before the
 * write is sent. A server that cannot confirm the level refuses the write with
 * `RedisDurabilityError` (retryable: a replica may attach, Sentinel may fail over again;
 * the next write probes again). The check is synchronous on the hot path: a socket compare.
 *
 * The connections have no offline queue (connection.ts), so no command reaches a new socket
 * before this check has run for it.
 */
export class PrimaryCheck {
  private readonly probed = new Map<RedisClient, Stream>();
  private readonly probing = new Map<RedisClient, Promise<void>>();
  private readonly level: RedisDurability;
  private readonly replicas: number;

  constructor(level: RedisDurability, replicas: number) {
    this.level = level;
    this.replicas = replicas;
  }

  /** Each client's socket now, to hand to `confirmed` once its server was probed. */
  static sockets(clients: readonly RedisClient[]): Map<RedisClient, Stream> {
    return new Map(clients.map((client) => [client, (client as Redis).stream]));
  }

  /** Records the sockets through which `open()` probed each client's server. */
  confirmed(sockets: ReadonlyMap<RedisClient, Stream>): void {
    for (const [client, stream] of sockets) this.probed.set(client, stream);
  }

  /** Whether every client is still on the socket its server was probed through. */
  current(clients: readonly RedisClient[]): boolean {
    for (const client of clients) {
      if (this.probed.get(client) !== (client as Redis).stream) return false;
    }
    return true;
  }

  /**
   * Probes the server of each client that moved, and adopts how it confirms writes (its
   * lane's `scripts`). Rejects, typed, when one cannot confirm the level or cannot be asked.
   */
  async recheck(
    lanes: ReadonlyArray<{ client: RedisClient; scripts: ScriptRunner }>,
  ): Promise<void> {
    await Promise.all(
      lanes.map((lane) => {
        const stream = (lane.client as Redis).stream;
        if (this.probed.get(lane.client) === stream) return undefined;
        let probe = this.probing.get(lane.client);
        if (probe === undefined) {
          probe = this.probe(lane, stream).finally(() => this.probing.delete(lane.client));
          this.probing.set(lane.client, probe);
        }
        return probe;
      }),
    );
  }

  private async probe(lane: { client: RedisClient; scripts: ScriptRunner }, stream: Stream) {
    const node = lane.client as Redis;
    if (node.status !== 'ready') {
      throw toKeepsakeError(
        new Error(`the connection is ${node.status} (a failover may be under way)`),
        'write after a reconnection',
      );
    }
    let facts: Awaited<ReturnType<typeof probeServer>>;
    try {
      facts = await probeServer(node);
    } catch (error) {
      throw toKeepsakeError(error, 'probe the new primary for its durability settings');
    }
    // The probe went over this socket only if it is still the client's.
    if (node.stream !== stream) {
      throw toKeepsakeError(
        new Error('the connection changed while its server was probed'),
        'write after a reconnection',
      );
    }
    const plan = planDurability(this.level, this.replicas, [facts]);
    if (!plan.ok) {
      throw new RedisDurabilityError(
        this.level,
        plan.server,
        `write after a failover: the new primary is weaker than durability '${this.level}' needs: ${plan.reason}`,
        { isRetryable: true },
      );
    }
    lane.scripts.durability = { ...lane.scripts.durability, method: plan.method };
    this.probed.set(lane.client, stream);
  }
}
