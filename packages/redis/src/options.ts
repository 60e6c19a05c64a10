import { InvalidConfigError } from '@keepsake/core';
import type { Cluster, ClusterNode, ClusterOptions, Redis, RedisOptions } from 'ioredis';
import { z } from 'zod';

/**
 * What a durable write (`save(…, { fsync: true })`, a `group` or `each` journal append,
 * `flushAll()`) waits for:
 * - `none`: the server's reply. The write is in the server's memory only; a server
 *   restart without persistence loses it (declared as the B3 gap);
 * - `aof`: the server's append-only file fsynced. Needs `appendonly yes`, and either
 *   `appendfsync always` (every reply then follows the fsync) or a server with WAITAOF
 *   (Redis ≥ 7.2), which the adapter then sends after each durable write;
 * - `replicas`: acknowledged by `replicas` replicas (`WAIT`).
 */
export type RedisDurability = 'none' | 'aof' | 'replicas';

export interface RedisAdapterOptions {
  /**
   * An existing ioredis client (`Redis` or `Cluster`). The adapter never closes it. Its own
   * options stay as they are: see the README on the settings that keep a lost connection
   * from resending a write (the adapter's scripts also make such a resend harmless).
   */
  client?: Redis | Cluster;
  /** A standalone server to connect to: `redis://[user:password@]host:port[/db]`, `rediss://…`. */
  url?: string;
  /** Seed nodes of a Redis Cluster to connect to (`host:port` strings or `{ host, port }`). */
  clusterNodes?: ReadonlyArray<string | { host: string; port: number }>;
  /**
   * Sentinels watching a primary and its replicas (`host:port` strings or `{ host, port }`):
   * the adapter asks them for the primary of `name` and connects to it. After a failover its
   * connections follow the new primary, whose durability is probed again before a write is
   * sent to it (see the README, "Sentinel").
   */
  sentinels?: ReadonlyArray<string | { host: string; port: number }>;
  /** With `sentinels`: the master group name they monitor (`sentinel monitor <name> …`). */
  name?: string;
  /** With `sentinels`: the sentinels' ACL user, when they require one. */
  sentinelUsername?: string;
  /**
   * With `sentinels`: the sentinels' password (their `requirepass`). The data servers'
   * password goes in `redisOptions.password` (and `redisOptions.username`).
   */
  sentinelPassword?: string;
  /**
   * More ioredis options for the connection the adapter makes (TLS, password, …). The
   * options that keep a write from being sent twice after a reconnect are the adapter's
   * and cannot be overridden (see the README).
   */
  redisOptions?: RedisOptions;
  /** More options of the `Cluster` the adapter makes from `clusterNodes`. */
  clusterOptions?: ClusterOptions;
  /**
   * Every key starts with `<keyPrefix>:`. Two adapters with the same prefix share data;
   * braces are refused, since they would move the hash tag out of the session id.
   * @default 'keepsake'
   */
  keyPrefix?: string;
  /**
   * B3: what a durable write waits for, confirmed by probing every master at `open()`.
   * @default 'aof' (the safe choice: a server that cannot confirm it fails at startup)
   */
  durability?: RedisDurability;
  /**
   * With `durability: 'replicas'`: how many replicas must acknowledge a durable write.
   * @default 1
   */
  replicas?: number;
  /**
   * How long a durable write waits for WAIT or WAITAOF before failing with
   * `RedisDurabilityError` (the write itself landed on the master).
   * @default 5_000
   */
  durabilityTimeoutMs?: number;
  /**
   * A connection that receives nothing this long after a command was sent is destroyed
   * (ioredis `socketTimeout`), so a black-holed network fails the commands in flight with
   * a retryable error instead of hanging; the connection is made again. Must exceed
   * `durabilityTimeoutMs`. Only for connections the adapter makes.
   * @default 10_000
   */
  socketTimeoutMs?: number;
  /**
   * How long `open()` (and each reconnection) may take to reach a server.
   * @default 10_000
   */
  connectTimeoutMs?: number;
  /**
   * With `url` or `sentinels`: how many connections the adapter opens to the server (the
   * primary). Every key of one
   * session (its document, journals, index entry) goes on the same connection, chosen by
   * the session id, so one session's writes keep their order; namespace-wide commands go on
   * the first. Redis reads a bounded amount from each connection per event-loop turn and,
   * with `appendfsync always`, fsyncs once per turn: more connections let more concurrent
   * durable writes share one fsync. Not with `client` (used as it is) or `clusterNodes` (one
   * connection per node).
   * @default 4
   */
  connections?: number;
  /**
   * Open for inspection: `open()` connects and writes nothing (no empty index is started, no
   * durability is probed: `durability` is taken as `'none'`), reads are the usual read-only
   * commands and scripts, and every write primitive rejects with `ReadOnlyError` before a
   * command is sent. See the README, "Read-only open".
   * @default false
   */
  readOnly?: boolean;
  /**
   * F1, E9: how long the connections of a run's owner must have been missing from the
   * server's client list before the owner counts as gone (its run is then repaired at once
   * instead of after the store's `recovery.graceMs`). A killed process's connections close
   * with it; a live one that lost its connection reconnects well within this. Only for
   * connections the adapter makes (they carry the owner's name); 0 turns owner liveness off.
   * @default 2_000
   */
  livenessConfirmMs?: number;
}

export interface ResolvedRedisAdapterOptions {
  readonly connection:
    | { readonly kind: 'client'; readonly client: Redis | Cluster }
    | { readonly kind: 'url'; readonly url: string }
    | { readonly kind: 'cluster'; readonly nodes: ClusterNode[] }
    | {
        readonly kind: 'sentinel';
        readonly sentinels: Array<{ host: string; port: number }>;
        readonly name: string;
        readonly sentinelUsername?: string;
        readonly sentinelPassword?: string;
      };
  readonly redisOptions: RedisOptions;
  readonly clusterOptions: ClusterOptions;
  readonly keyPrefix: string;
  readonly durability: RedisDurability;
  readonly replicas: number;
  readonly durabilityTimeoutMs: number;
  readonly socketTimeoutMs: number;
  readonly connectTimeoutMs: number;
  /** Connections to a standalone server (or Sentinel's primary) the adapter makes (1 for `client` and Cluster). */
  readonly connections: number;
  readonly readOnly: boolean;
  /** 0: no owner liveness. */
  readonly livenessConfirmMs: number;
}

/** Connections to a `url` when the option is not given (see `connections`). */
export const DEFAULT_CONNECTIONS = 4;

const clientSchema = z.custom<Redis | Cluster>(
  (value) =>
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { isCluster?: unknown }).isCluster === 'boolean' &&
    typeof (value as { defineCommand?: unknown }).defineCommand === 'function',
  { message: 'must be an ioredis Redis or Cluster instance' },
);

const nodeSchema = z.union([
  z.string().regex(/^[^\s:]+:\d{1,5}$/, 'must be "host:port"'),
  z.strictObject({ host: z.string().min(1), port: z.number().int().min(1).max(65_535) }),
]);

const optionsSchema = z
  .strictObject({
    client: clientSchema.optional(),
    url: z
      .string()
      .regex(/^rediss?:\/\/\S+$/, 'must be a redis:// or rediss:// URL')
      .optional(),
    clusterNodes: z.array(nodeSchema).min(1, 'must name at least one node').optional(),
    sentinels: z.array(nodeSchema).min(1, 'must name at least one sentinel').optional(),
    name: z
      .string()
      .regex(/^\S{1,200}$/, 'must be the master group name, 1 to 200 characters without whitespace')
      .optional(),
    sentinelUsername: z.string().min(1).optional(),
    sentinelPassword: z.string().min(1).optional(),
    redisOptions: z.record(z.string(), z.unknown()).optional(),
    clusterOptions: z.record(z.string(), z.unknown()).optional(),
    keyPrefix: z
      .string()
      .regex(
        /^[^{}\s]{1,200}$/,
        'must be 1 to 200 characters without braces or whitespace (a brace would move the hash tag)',
      )
      .default('keepsake'),
    durability: z.enum(['none', 'aof', 'replicas']).default('aof'),
    replicas: z.number().int().min(1).max(64).default(1),
    durabilityTimeoutMs: z.number().int().positive().default(5_000),
    socketTimeoutMs: z.number().int().positive().default(10_000),
    connectTimeoutMs: z.number().int().positive().default(10_000),
    connections: z.number().int().min(1).max(64).optional(),
    readOnly: z.boolean().default(false),
    livenessConfirmMs: z.number().int().min(0).max(600_000).default(2_000),
  })
  .superRefine((options, context) => {
    const given = (['client', 'url', 'clusterNodes', 'sentinels'] as const).filter(
      (name) => options[name] !== undefined,
    );
    if (given.length !== 1) {
      context.addIssue({
        code: 'custom',
        path: given.length === 0 ? ['url'] : [given[1]!],
        message:
          given.length === 0
            ? 'one of `client`, `url`, `clusterNodes` or `sentinels` is required'
            : `give one of \`client\`, \`url\`, \`clusterNodes\` or \`sentinels\`, not ${given.map((name) => `\`${name}\``).join(' and ')}`,
      });
    }
    if (options.sentinels !== undefined && options.name === undefined) {
      context.addIssue({
        code: 'custom',
        path: ['name'],
        message: 'is required with `sentinels`: the master group name the sentinels monitor',
      });
    }
    for (const option of ['name', 'sentinelUsername', 'sentinelPassword'] as const) {
      if (options[option] !== undefined && options.sentinels === undefined) {
        context.addIssue({
          code: 'custom',
          path: [option],
          message: 'applies to `sentinels` only',
        });
      }
    }
    const manyConnections = options.url !== undefined || options.sentinels !== undefined;
    if (options.connections !== undefined && !manyConnections && given.length === 1) {
      context.addIssue({
        code: 'custom',
        path: ['connections'],
        message: `applies to \`url\` and \`sentinels\` only: a \`client\` passed in is used as it is, and a Cluster keeps one connection per node`,
      });
    }
    if (options.socketTimeoutMs <= options.durabilityTimeoutMs) {
      context.addIssue({
        code: 'custom',
        path: ['socketTimeoutMs'],
        message: `must exceed durabilityTimeoutMs (${options.durabilityTimeoutMs}): a WAIT may take that long without a byte on the connection`,
      });
    }
  });

/** Validates options at construction; a bad option is an InvalidConfigError naming it. */
export function resolveOptions(options: unknown): ResolvedRedisAdapterOptions {
  const result = optionsSchema.safeParse(options);
  if (!result.success) {
    const issue = result.error.issues[0];
    const option = issue?.path.length ? issue.path.join('.') : null;
    const message = option
      ? `redis adapter: option \`${option}\` is invalid: ${issue?.message}`
      : `redis adapter: options are invalid: ${issue?.message ?? 'expected an object'}`;
    throw new InvalidConfigError(message, { cause: result.error });
  }
  const data = result.data;
  if (data.client !== undefined) assertNoClientKeyPrefix(data.client);
  const connection: ResolvedRedisAdapterOptions['connection'] =
    data.client !== undefined
      ? { kind: 'client', client: data.client }
      : data.url !== undefined
        ? { kind: 'url', url: data.url }
        : data.sentinels !== undefined
          ? {
              kind: 'sentinel',
              sentinels: data.sentinels.map(toAddress),
              name: data.name!,
              ...(data.sentinelUsername === undefined
                ? {}
                : { sentinelUsername: data.sentinelUsername }),
              ...(data.sentinelPassword === undefined
                ? {}
                : { sentinelPassword: data.sentinelPassword }),
            }
          : { kind: 'cluster', nodes: (data.clusterNodes ?? []).map(toClusterNode) };
  return {
    connection,
    redisOptions: (data.redisOptions ?? {}) as RedisOptions,
    clusterOptions: (data.clusterOptions ?? {}) as ClusterOptions,
    keyPrefix: data.keyPrefix,
    // Read-only: nothing is written, so no durability is waited for or probed.
    durability: data.readOnly ? 'none' : data.durability,
    readOnly: data.readOnly,
    replicas: data.replicas,
    durabilityTimeoutMs: data.durabilityTimeoutMs,
    socketTimeoutMs: data.socketTimeoutMs,
    connectTimeoutMs: data.connectTimeoutMs,
    connections:
      connection.kind === 'url' || connection.kind === 'sentinel'
        ? (data.connections ?? DEFAULT_CONNECTIONS)
        : 1,
    livenessConfirmMs: data.livenessConfirmMs,
  };
}

/**
 * ioredis prefixes the keys a command declares, but not the keys a script names itself
 * (a session's journals are found through a set of run ids), so a client-side prefix
 * would split one session's keys between two names. The adapter's `keyPrefix` does it.
 */
function assertNoClientKeyPrefix(client: Redis | Cluster): void {
  const prefix = (client.options as { keyPrefix?: string } | undefined)?.keyPrefix;
  if (prefix !== undefined && prefix !== '') {
    throw new InvalidConfigError(
      `redis adapter: option \`client\` is invalid: the client has the ioredis option keyPrefix ("${prefix}"); pass it as the adapter's \`keyPrefix\` option instead`,
    );
  }
}

function toClusterNode(node: string | { host: string; port: number }): ClusterNode {
  return toAddress(node);
}

function toAddress(node: string | { host: string; port: number }): { host: string; port: number } {
  if (typeof node !== 'string') return { host: node.host, port: node.port };
  const separator = node.lastIndexOf(':');
  return { host: node.slice(0, separator), port: Number(node.slice(separator + 1)) };
}
