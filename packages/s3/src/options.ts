import type { S3Client } from '@aws-sdk/client-s3';
import { InvalidConfigError } from '@keepsake/core';
import { z } from 'zod';

/**
 * Known deviations of S3-compatible servers the adapter works around:
 * - `standard`: AWS S3, MinIO, Cloudflare R2 (conditional PUTs as AWS documents them);
 * - `ceph-rgw`: Ceph RADOS Gateway 16 (Pacific, what Debian 12 ships) compares `If-Match`
 *   with the ETag *without* its quotes, so the adapter sends it unquoted (every conditional
 *   update fails otherwise). Its other quirks need no option: a lost race answered 500 is
 *   retried like any 5xx (the retry then gets 412), `If-Match` on a missing key answers 412
 *   where AWS answers 404 (both read as a conflict), and DeleteObject ignores `If-Match`
 *   (the adapter never relies on a conditional delete for safety).
 */
export type S3Compatibility = 'standard' | 'ceph-rgw';

export interface S3AdapterOptions {
  /**
   * An existing S3Client. The adapter never closes it and never changes its configuration
   * (the compatibility middleware is added to each command, not to the client). Give it
   * `requestChecksumCalculation: 'WHEN_REQUIRED'` for servers without the newer checksum
   * headers (Ceph 16, older MinIO). Without it the adapter makes its own client from the
   * options below.
   */
  client?: S3Client;
  /** The bucket. It must exist unless `createBucket` is set. */
  bucket: string;
  /**
   * Every key starts with `<prefix>/`. Two adapters with the same bucket and prefix share
   * data; a prefix is one namespace.
   * @default 'keepsake'
   */
  prefix?: string;
  /** A custom endpoint: MinIO, R2 (`https://<account>.r2.cloudflarestorage.com`), an RGW. */
  endpoint?: string;
  /** @default 'us-east-1' (R2 wants 'auto') */
  region?: string;
  /**
   * Path-style URLs (`endpoint/bucket/key`) instead of virtual-hosted ones: MinIO and RGW
   * without wildcard DNS need it.
   * @default true when `endpoint` is given, false otherwise
   */
  forcePathStyle?: boolean;
  /**
   * Credentials for the client the adapter makes. Without them the SDK's default chain is
   * used (environment, shared files, instance metadata).
   */
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
  /** @default 'standard' */
  compatibility?: S3Compatibility;
  /**
   * Lets `open()` accept an endpoint that ignores conditional writes (some emulators). The
   * adapter then checks revisions itself, which is safe only while ONE process writes the
   * prefix: concurrent writers in other processes can overwrite each other (B4 is declared
   * as a gap). Never set it for a bucket that several servers share.
   * @default false
   */
  unsafeSingleWriter?: boolean;
  /** Create the bucket at `open()` when it does not exist. @default false */
  createBucket?: boolean;
  /**
   * Open for inspection: `open()` checks that the bucket exists (a HEAD) and writes nothing
   * (no probe of conditional writes, which writes a scratch object; no index marker; no
   * bucket is created); only GET, HEAD and LIST requests are ever sent, and every write
   * primitive rejects with `ReadOnlyError`. See the README, "Read-only open".
   * @default false
   */
  readOnly?: boolean;
  /**
   * Deadline of one request attempt; an attempt that takes longer is aborted and, like a
   * reset connection, retried.
   * @default 10_000
   */
  requestTimeoutMs?: number;
  retry?: {
    /** Attempts per operation, the first included. @default 4 */
    attempts?: number;
    /** First backoff; each later one doubles, with full jitter. @default 50 */
    baseDelayMs?: number;
    /** Longest backoff. @default 2_000 */
    maxDelayMs?: number;
  };
  journal?: {
    /**
     * How long journal appends made with durability `none` (the `terminal` journal policy's
     * tokens) wait to share one segment object. 0: every append is one PUT, visible to
     * other processes when it resolves. Above 0: appends within the window resolve at once
     * and are written together (one PUT per window per run); until then other processes do
     * not see them and a crash of this process loses them, which `none` allows. Durable
     * appends (`group`, `each`) always write at once, with whatever is waiting.
     * @default 0
     */
    batchWindowMs?: number;
    /** A waiting batch is written as soon as it holds this many bytes. @default 1_048_576 */
    maxBatchBytes?: number;
  };
  /**
   * F1, E9: the owner lease that lets other instances tell at once that this one is gone
   * (its runs are then repaired without waiting out the grace). One empty object per
   * adapter instance, PUT every `renewIntervalMs` by a worker thread (so a stalled event
   * loop keeps renewing); gone when older than `expireAfterMs` by the server's clock, or
   * removed at `close()`. Only when the adapter makes its own client (a client passed in
   * cannot move to the worker) and not read-only. `false`: no lease, no liveness.
   * See the README, "Owner liveness".
   */
  ownerLease?:
    | false
    | {
        /**
         * One PUT per instance per interval (2,592,000 a month at 1 s).
         * @default 1_000
         */
        renewIntervalMs?: number;
        /**
         * At least twice the interval; with the defaults a killed owner reads as gone about
         * 4 s after its death (the server's whole seconds add up to 2 s).
         * @default 3_000
         */
        expireAfterMs?: number;
      };
}

export interface ResolvedS3AdapterOptions {
  readonly client: S3Client | null;
  readonly bucket: string;
  readonly prefix: string;
  readonly endpoint: string | null;
  readonly region: string;
  readonly forcePathStyle: boolean;
  readonly credentials: {
    readonly accessKeyId: string;
    readonly secretAccessKey: string;
    readonly sessionToken?: string | undefined;
  } | null;
  readonly compatibility: S3Compatibility;
  readonly unsafeSingleWriter: boolean;
  readonly createBucket: boolean;
  readonly readOnly: boolean;
  readonly requestTimeoutMs: number;
  readonly retry: { attempts: number; baseDelayMs: number; maxDelayMs: number };
  readonly journal: { batchWindowMs: number; maxBatchBytes: number };
  readonly ownerLease: { renewIntervalMs: number; expireAfterMs: number } | null;
}

const clientSchema = z.custom<S3Client>(
  (value) =>
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { send?: unknown }).send === 'function' &&
    typeof (value as { middlewareStack?: unknown }).middlewareStack === 'object',
  { message: 'must be an S3Client of @aws-sdk/client-s3' },
);

const optionsSchema = z
  .strictObject({
    client: clientSchema.optional(),
    bucket: z
      .string()
      .regex(
        /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/,
        'must be an S3 bucket name (3 to 63 lowercase letters, digits, dots and hyphens)',
      ),
    prefix: z
      .string()
      .regex(
        /^[A-Za-z0-9_.-]+(\/[A-Za-z0-9_.-]+)*$/,
        'must be 1 or more path segments of letters, digits, "_", "." and "-", separated by "/", without a leading or trailing "/"',
      )
      .max(400)
      .default('keepsake'),
    endpoint: z.url().optional(),
    region: z.string().min(1).default('us-east-1'),
    forcePathStyle: z.boolean().optional(),
    credentials: z
      .strictObject({
        accessKeyId: z.string().min(1),
        secretAccessKey: z.string().min(1),
        sessionToken: z.string().min(1).optional(),
      })
      .optional(),
    compatibility: z.enum(['standard', 'ceph-rgw']).default('standard'),
    unsafeSingleWriter: z.boolean().default(false),
    createBucket: z.boolean().default(false),
    readOnly: z.boolean().default(false),
    requestTimeoutMs: z.number().int().min(100).max(600_000).default(10_000),
    retry: z
      .strictObject({
        attempts: z.number().int().min(1).max(20).default(4),
        baseDelayMs: z.number().int().min(0).max(60_000).default(50),
        maxDelayMs: z.number().int().min(0).max(600_000).default(2_000),
      })
      .prefault({}),
    journal: z
      .strictObject({
        batchWindowMs: z.number().int().min(0).max(60_000).default(0),
        maxBatchBytes: z
          .number()
          .int()
          .min(1024)
          .max(64 * 1024 * 1024)
          .default(1024 * 1024),
      })
      .prefault({}),
    ownerLease: z
      .union([
        z.literal(false),
        z
          .strictObject({
            renewIntervalMs: z.number().int().min(100).max(600_000).default(1_000),
            expireAfterMs: z.number().int().min(1_000).max(3_600_000).default(3_000),
          })
          .refine((lease) => lease.expireAfterMs >= 2 * lease.renewIntervalMs, {
            message: 'expireAfterMs must be at least twice renewIntervalMs',
            path: ['expireAfterMs'],
          }),
      ])
      .prefault({}),
  })
  .superRefine((options, context) => {
    if (options.client === undefined) return;
    for (const name of ['endpoint', 'forcePathStyle', 'credentials'] as const) {
      if (options[name] !== undefined) {
        context.addIssue({
          code: 'custom',
          path: [name],
          message:
            'configures the client the adapter makes: set it on the S3Client you pass instead',
        });
      }
    }
  });

/** Validates options at construction; a bad option is an InvalidConfigError naming it. */
export function resolveOptions(options: unknown): ResolvedS3AdapterOptions {
  const result = optionsSchema.safeParse(options);
  if (!result.success) {
    const issue = result.error.issues[0];
    const option = issue?.path.length ? issue.path.join('.') : null;
    const message = option
      ? `s3 adapter: option \`${option}\` is invalid: ${issue?.message}`
      : `s3 adapter: options are invalid: ${issue?.message ?? 'expected an object'}`;
    throw new InvalidConfigError(message, { cause: result.error });
  }
  const data = result.data;
  return {
    client: data.client ?? null,
    bucket: data.bucket,
    prefix: data.prefix,
    endpoint: data.endpoint ?? null,
    region: data.region,
    forcePathStyle: data.forcePathStyle ?? data.endpoint !== undefined,
    credentials: data.credentials ?? null,
    compatibility: data.compatibility,
    unsafeSingleWriter: data.unsafeSingleWriter,
    createBucket: data.createBucket,
    readOnly: data.readOnly,
    requestTimeoutMs: data.requestTimeoutMs,
    retry: data.retry,
    journal: data.journal,
    ownerLease: data.ownerLease === false ? null : data.ownerLease,
  };
}
