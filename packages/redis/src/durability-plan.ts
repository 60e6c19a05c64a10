import type { RedisDurability } from './options.js';

/**
 * How a durable write is confirmed, decided from what the probe found on every master:
 * - `none`: nothing to wait for (durability `none`);
 * - `reply`: the reply itself (`appendfsync always`: Redis fsyncs the AOF before it answers);
 * - `waitaof`: `WAITAOF 1 0 <timeout>` after the write (Redis ≥ 7.2, any `appendfsync`);
 * - `wait`: `WAIT <replicas> <timeout>` after the write.
 */
export type ConfirmMethod = 'none' | 'reply' | 'waitaof' | 'wait';

/** What the probe learned of one master. `null`: the server would not say. */
export interface ServerFacts {
  /** host:port, for messages. */
  readonly server: string;
  /** `redis_version` from INFO server, e.g. "7.0.15". */
  readonly version: string | null;
  /** CONFIG GET appendonly, or INFO persistence `aof_enabled` where CONFIG is refused. */
  readonly appendonly: boolean | null;
  /** CONFIG GET appendfsync ("always", "everysec", "no"); null where CONFIG is refused. */
  readonly appendfsync: string | null;
  /** INFO replication `connected_slaves`. */
  readonly connectedReplicas: number | null;
}

export type DurabilityPlan =
  | { readonly ok: true; readonly method: ConfirmMethod }
  | { readonly ok: false; readonly server: string; readonly reason: string };

/** WAITAOF arrived in Redis 7.2. */
export function hasWaitAof(version: string | null): boolean {
  if (version === null) return false;
  const [major = 0, minor = 0] = version.split('.').map(Number);
  return major > 7 || (major === 7 && minor >= 2);
}

/**
 * Decides how durable writes are confirmed, or why they cannot be: a server that cannot
 * confirm the configured level is refused at `open()`, never discovered by a lost write.
 * On Cluster the weakest master decides (WAITAOF costs nothing extra on an `always` server).
 */
export function planDurability(
  level: RedisDurability,
  replicas: number,
  servers: readonly ServerFacts[],
): DurabilityPlan {
  if (level === 'none') return { ok: true, method: 'none' };
  if (level === 'replicas') {
    for (const facts of servers) {
      const connected = facts.connectedReplicas ?? 0;
      if (connected < replicas) {
        return {
          ok: false,
          server: facts.server,
          reason: `durability 'replicas' needs ${replicas} connected replica(s), and ${facts.server} has ${connected}; attach replicas (replicaof) or lower the \`replicas\` option`,
        };
      }
    }
    return { ok: true, method: 'wait' };
  }
  let method: ConfirmMethod = 'reply';
  for (const facts of servers) {
    if (facts.appendonly !== true) {
      return {
        ok: false,
        server: facts.server,
        reason:
          facts.appendonly === null
            ? `durability 'aof' cannot be confirmed: ${facts.server} answers neither CONFIG GET appendonly nor INFO persistence`
            : `durability 'aof' needs the append-only file, and ${facts.server} has appendonly no; set \`appendonly yes\` and \`appendfsync always\` (or durability: 'none')`,
      };
    }
    if (facts.appendfsync === 'always') continue;
    if (hasWaitAof(facts.version)) {
      method = 'waitaof';
      continue;
    }
    const fsync =
      facts.appendfsync === null
        ? 'its appendfsync cannot be read (CONFIG is refused)'
        : `it has appendfsync ${facts.appendfsync}`;
    return {
      ok: false,
      server: facts.server,
      reason: `durability 'aof' cannot be confirmed on ${facts.server}: ${fsync}, and Redis ${facts.version ?? '(unknown version)'} has no WAITAOF (Redis ≥ 7.2); set \`appendfsync always\``,
    };
  }
  return { ok: true, method };
}
