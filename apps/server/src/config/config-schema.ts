import { hostname } from 'node:os';
import { z } from 'zod';

/**
 * The server's whole configuration. Every backend has its own variant of `backend`, keyed
 * by `kind`, so adding Redis or S3 means adding a factory for a variant that is already
 * validated here; no route changes.
 */

const namespaceId = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,64}$/, 'must match ^[A-Za-z0-9_-]{1,64}$ (it names a storage root)');

export const fsBackendSchema = z.object({
  kind: z.literal('fs'),
  /** Root directory; each token namespace gets its own subdirectory. @default './data' */
  directory: z.string().min(1).default('./data'),
});

export const memoryBackendSchema = z.object({
  /** The in-memory reference adapter: nothing survives a restart. Tests and demos only. */
  kind: z.literal('memory'),
});

export const redisBackendSchema = z
  .object({
    kind: z.literal('redis'),
    /**
     * e.g. redis://127.0.0.1:6379/0; with `mode: 'cluster'`, any node of the cluster; with
     * `mode: 'sentinel'`, `redis://[user:password@]<master group name>`: the sentinels name
     * the primary of that group, and the user and password are the data servers'.
     */
    url: z.url({
      protocol: /^rediss?$/,
      error: 'must be a redis:// or rediss:// URL with a host, e.g. redis://127.0.0.1:6379',
    }),
    /**
     * Every key starts with `<keyPrefix>:<namespace>:`; no braces (they would move the
     * Cluster hash tag out of the session id). @default 'keepsake'
     */
    keyPrefix: z
      .string()
      .regex(/^[^{}\s]{1,100}$/, 'must be 1 to 100 characters without braces or whitespace')
      .default('keepsake'),
    /**
     * `standalone` (one server, or a primary), `cluster` (the URL names a seed node) or
     * `sentinel` (the sentinels name the primary of the URL's group). @default 'standalone'
     */
    mode: z.enum(['standalone', 'cluster', 'sentinel']).default('standalone'),
    /** With `mode: 'sentinel'`: the sentinels, `host:port,host:port,…`. */
    sentinels: z
      .string()
      .regex(
        /^[^\s:,]+:\d{1,5}(,[^\s:,]+:\d{1,5})*$/,
        'must be host:port pairs separated by commas, e.g. 10.0.0.1:26379,10.0.0.2:26379',
      )
      .optional(),
    /** With `mode: 'sentinel'`: the sentinels' password (their `requirepass`), if any. */
    sentinelPassword: z.string().min(1).optional(),
    /**
     * What a durable save waits for (see @keepsake/redis): `aof` needs `appendonly yes` and
     * `appendfsync always` (or Redis ≥ 7.2), `replicas` that many replicas, `none` nothing.
     * Probed when a namespace's store opens. @default 'aof'
     */
    durability: z.enum(['none', 'aof', 'replicas']).default('aof'),
    /** With `durability: 'replicas'`: replicas that must acknowledge a durable save. @default 1 */
    replicas: z.number().int().min(1).max(64).default(1),
  })
  .superRefine((backend, context) => {
    if (backend.mode === 'sentinel' && backend.sentinels === undefined) {
      context.addIssue({
        code: 'custom',
        path: ['sentinels'],
        message: "is required with mode 'sentinel'",
      });
    }
    if (backend.mode !== 'sentinel') {
      for (const field of ['sentinels', 'sentinelPassword'] as const) {
        if (backend[field] !== undefined) {
          context.addIssue({
            code: 'custom',
            path: [field],
            message: "applies to mode 'sentinel' only",
          });
        }
      }
    }
  });

/** A flag from a file (true/false) or from the environment ("true"/"false"). */
const flag = z.union([z.boolean(), z.enum(['true', 'false']).transform((text) => text === 'true')]);

export const s3BackendSchema = z.object({
  kind: z.literal('s3'),
  /** The bucket; it must exist unless `createBucket` is set. */
  bucket: z
    .string()
    .regex(
      /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/,
      'must be an S3 bucket name (3 to 63 lowercase letters, digits, dots and hyphens)',
    ),
  /** Every object key starts with `<prefix>/<namespace>/`. @default 'keepsake' */
  prefix: z
    .string()
    .regex(
      /^[A-Za-z0-9_.-]+(\/[A-Za-z0-9_.-]+)*$/,
      'must be path segments of letters, digits, "_", "." and "-" separated by "/", without a leading or trailing "/"',
    )
    .default('keepsake'),
  region: z.string().min(1).default('us-east-1'),
  /** A custom endpoint (MinIO, R2, Ceph RGW and other S3-compatible services). */
  endpoint: z.url().optional(),
  /** Path-style URLs (MinIO, RGW without wildcard DNS). @default true with an endpoint */
  forcePathStyle: flag.optional(),
  /** Without them the AWS SDK's default chain is used (environment, files, instance role). */
  accessKeyId: z.string().min(1).optional(),
  secretAccessKey: z.string().min(1).optional(),
  /** `ceph-rgw` for Ceph RADOS Gateway 16 (see @keepsake/s3). @default 'standard' */
  compatibility: z.enum(['standard', 'ceph-rgw']).default('standard'),
  /** Accept an endpoint that ignores conditional writes: ONE server process only. @default false */
  unsafeSingleWriter: flag.default(false),
  /** Create the bucket when it does not exist. @default false */
  createBucket: flag.default(false),
  /** Journal batch window for appends of durability `none` (0: one PUT each). @default 0 */
  journalBatchWindowMs: z.number().int().min(0).max(60_000).default(0),
});

export const backendSchema = z.discriminatedUnion('kind', [
  fsBackendSchema,
  memoryBackendSchema,
  redisBackendSchema,
  s3BackendSchema,
]);

export const tokenSchema = z.object({
  /** Long random secret sent as `Authorization: Bearer <token>`. */
  token: z.string().min(16, 'must be at least 16 characters'),
  /** The storage namespace this token reads and writes; no other token can reach it. */
  namespace: namespaceId,
});

export const scriptedAgentSchema = z.object({
  kind: z.literal('scripted'),
  /** Delay between streamed tokens; 0 streams as fast as the store appends. @default 35 */
  tokenDelayMs: z.number().int().min(0).max(10_000).default(35),
  /** Words in each scripted answer (a longer answer makes cancel and reload easier to try). @default 60 */
  answerWords: z.number().int().min(1).max(5_000).default(60),
});

export const openAiAgentSchema = z.object({
  kind: z.literal('openai'),
  /** An OpenAI-compatible API root, e.g. https://api.openai.com/v1 or a local server. */
  baseUrl: z.url(),
  apiKey: z.string().min(1),
  /** @default 'gpt-4o-mini' */
  model: z.string().min(1).default('gpt-4o-mini'),
  /** The whole request, first byte to last, must finish within this. @default 120000 */
  timeoutMs: z.number().int().positive().default(120_000),
  /** Optional system prompt sent before the transcript. */
  systemPrompt: z.string().optional(),
});

export const agentSchema = z.discriminatedUnion('kind', [scriptedAgentSchema, openAiAgentSchema]);

export const configSchema = z
  .object({
    server: z
      .object({
        /** @default 3000 */
        port: z.number().int().min(0).max(65_535).default(3000),
        /** Loopback by default: open mode (no tokens) is refused on any other address. @default '127.0.0.1' */
        host: z.string().min(1).default('127.0.0.1'),
        /** Largest request body accepted. @default 65536 */
        bodyLimitBytes: z
          .number()
          .int()
          .min(1024)
          .max(16 * 1024 * 1024)
          .default(64 * 1024),
        /** Largest message a user may send, in characters. @default 16000 */
        maxMessageChars: z.number().int().min(1).max(1_000_000).default(16_000),
        rateLimit: z
          .object({
            /** Requests per window per token (or per address when unauthenticated). @default 600 */
            max: z.number().int().positive().default(600),
            /** @default 60000 */
            windowMs: z.number().int().positive().default(60_000),
          })
          .prefault({}),
        /** SIGTERM: time allowed for runs to finish and the store to close. @default 10000 */
        shutdownDeadlineMs: z.number().int().min(100).default(10_000),
        /** `/readyz`: a backend probe slower than this counts as unreachable. @default 2000 */
        readinessTimeoutMs: z.number().int().min(1).max(60_000).default(2_000),
        /** `/readyz`: how long one probe's result is reused (probes cost one read per interval). @default 1000 */
        readinessCacheMs: z.number().int().min(0).max(60_000).default(1_000),
        /**
         * Names this instance in metrics (`instance` label), log lines and run lookups.
         * @default '<hostname>-<pid>'
         */
        instanceId: z
          .string()
          .regex(
            /^[A-Za-z0-9_.:-]{1,128}$/,
            'must be 1–128 characters of A-Z, a-z, 0-9, "_", ".", ":" or "-"',
          )
          .default(() => `${hostname()}-${process.pid}`),
        /** @default 'info' */
        logLevel: z
          .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
          .default('info'),
      })
      .prefault({}),
    backend: backendSchema.prefault({ kind: 'fs' }),
    auth: z
      .object({
        /** Empty: open mode, one `default` namespace, loopback only. */
        tokens: z.array(tokenSchema).default([]),
      })
      .prefault({})
      .superRefine((auth, context) => {
        const seen = new Set<string>();
        for (const [index, entry] of auth.tokens.entries()) {
          if (seen.has(entry.token)) {
            context.addIssue({
              code: 'custom',
              path: ['tokens', index, 'token'],
              message: 'the same token is listed twice',
            });
          }
          seen.add(entry.token);
        }
      }),
    agent: agentSchema.prefault({ kind: 'scripted' }),
    store: z
      .object({
        /** E2 journal durability. @default 'group' */
        journalDurability: z.enum(['terminal', 'group', 'each']).default('group'),
        /** F1: a pending turn with no sign of life for this long is recovered. @default 30000 */
        recoveryGraceMs: z.number().int().min(0).default(30_000),
        /** E4: checkpoint interval of a live run. @default 5000 */
        checkpointIntervalMs: z.number().int().min(10).default(5_000),
      })
      .prefault({}),
    streaming: z
      .object({
        /** How often an SSE tail polls the journal for records written by another process. @default 250 */
        pollIntervalMs: z.number().int().min(10).max(60_000).default(250),
        /** SSE comment heartbeat, so proxies keep idle streams open. @default 15000 */
        heartbeatMs: z.number().int().min(0).default(15_000),
      })
      .prefault({}),
  })
  .superRefine((config, context) => {
    if (config.auth.tokens.length === 0 && !isLoopbackHost(config.server.host)) {
      context.addIssue({
        code: 'custom',
        path: ['auth', 'tokens'],
        message: `no tokens are configured, and open mode is only allowed on a loopback host (server.host is "${config.server.host}"); configure tokens or bind to 127.0.0.1`,
      });
    }
  });

/** Open mode is for a newcomer's own machine; anything reachable from elsewhere needs tokens. */
export function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127(\.\d{1,3}){3}$/.test(host);
}

export type ServerConfig = z.infer<typeof configSchema>;
export type ServerConfigInput = z.input<typeof configSchema>;
export type BackendConfig = z.infer<typeof backendSchema>;
export type AgentConfig = z.infer<typeof agentSchema>;
export type TokenConfig = z.infer<typeof tokenSchema>;
