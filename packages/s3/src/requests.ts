import {
  CopyObjectCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { BackendError } from '@keepsake/core';
import { backoffDelay, type RetryPolicy, sleep } from './backoff.js';
import { ADAPTER_NAME, classify, toKeepsakeError } from './errors.js';
import type { S3Compatibility } from './options.js';

/** What a HEAD or a GET learns about an object. */
export interface ObjectInfo {
  readonly etag: string;
  /** User metadata (`x-amz-meta-*`), keys in lower case. */
  readonly metadata: Readonly<Record<string, string>>;
  readonly lastModified: number;
}

export interface ObjectRead extends ObjectInfo {
  readonly body: string;
}

export interface ListedObject {
  readonly key: string;
  readonly lastModified: number;
  /** As S3 lists it (quoted); '' when the endpoint leaves it out. */
  readonly etag: string;
}

export interface ListPage {
  readonly objects: ListedObject[];
  readonly prefixes: string[];
  readonly nextToken: string | null;
}

export interface PutConditions {
  /** `If-Match`: the ETag the object must have. */
  readonly ifMatch?: string;
  /** `If-None-Match: *`: the object must not exist. */
  readonly ifNoneMatch?: true;
}

export type PutOutcome =
  | {
      readonly ok: true;
      readonly etag: string;
      /**
       * A lower bound of the server's clock when the PUT was sent, in milliseconds: its `Date`
       * reply header (whole seconds, so the server's time at the reply is below it + 1 s)
       * less the time the attempt took. Null when the reply carried no readable `Date`.
       */
      readonly serverTimeAtSend: number | null;
    }
  | { readonly ok: false };

interface Sendable {
  middlewareStack: { add: (middleware: never, options: never) => void };
}

/**
 * Every S3 request the adapter makes, in one place: the bucket, the deadline of each
 * attempt, the compatibility middleware, and retries of idempotent calls with backoff.
 *
 * Writes whose retry needs thought (a conditional PUT, whose first attempt may have landed)
 * are sent once (`putOnce`); their callers decide what a retry means. Everything else is
 * idempotent and retried here on a transient failure.
 */
export class S3Requests {
  readonly client: S3Client;
  readonly bucket: string;
  readonly retry: RetryPolicy;
  private readonly compatibility: S3Compatibility;
  private readonly requestTimeoutMs: number;

  constructor(
    client: S3Client,
    bucket: string,
    compatibility: S3Compatibility,
    requestTimeoutMs: number,
    retry: RetryPolicy,
  ) {
    this.client = client;
    this.bucket = bucket;
    this.compatibility = compatibility;
    this.requestTimeoutMs = requestTimeoutMs;
    this.retry = retry;
  }

  /** One attempt of a command, within its deadline. */
  async send<Output>(command: { input: unknown } & Sendable): Promise<Output> {
    if (this.compatibility === 'ceph-rgw') addUnquotedIfMatch(command);
    return (await this.client.send(command as never, {
      abortSignal: AbortSignal.timeout(this.requestTimeoutMs),
    })) as Output;
  }

  /**
   * Runs an idempotent call, retrying transient failures (5xx, throttling, timeouts, resets)
   * with backoff; `missing` failures resolve to `onMissing`. Gives up with a typed error.
   */
  async idempotent<T>(operation: string, call: () => Promise<T>, onMissing?: () => T): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await call();
      } catch (error) {
        const failure = classify(error);
        if (failure.kind === 'missing' && onMissing !== undefined) return onMissing();
        if (failure.kind !== 'transient' || attempt + 1 >= this.retry.attempts) {
          throw toKeepsakeError(error, operation);
        }
        await sleep(backoffDelay(this.retry, attempt));
      }
    }
  }

  head(key: string, operation: string): Promise<ObjectInfo | null> {
    return this.idempotent(
      operation,
      async () => {
        const output = await this.send<{
          ETag?: string;
          Metadata?: Record<string, string>;
          LastModified?: Date;
        }>(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
        return info(output);
      },
      () => null,
    );
  }

  get(key: string, operation: string): Promise<ObjectRead | null> {
    return this.idempotent(
      operation,
      async () => {
        const output = await this.send<{
          ETag?: string;
          Metadata?: Record<string, string>;
          LastModified?: Date;
          Body?: { transformToString(encoding?: string): Promise<string> };
        }>(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
        const body = (await output.Body?.transformToString('utf-8')) ?? '';
        return { ...info(output), body };
      },
      () => null,
    );
  }

  /**
   * One PUT attempt. A failed precondition (412) is `{ ok: false }`; any other failure is
   * thrown as the SDK gave it, for the caller to classify (it may have landed).
   */
  async putOnce(
    key: string,
    body: string,
    metadata: Record<string, string>,
    conditions: PutConditions = {},
  ): Promise<PutOutcome> {
    const sentAt = performance.now();
    let date: string | undefined;
    try {
      const command = new PutObjectCommand({
        Bucket: this.bucket,
        Key: key,
        Body: body,
        // Known up front: the SDK warns about a body of unknown length otherwise.
        ContentLength: Buffer.byteLength(body),
        ContentType: 'application/json; charset=utf-8',
        Metadata: metadata,
        ...(conditions.ifMatch === undefined ? {} : { IfMatch: conditions.ifMatch }),
        ...(conditions.ifNoneMatch === true ? { IfNoneMatch: '*' } : {}),
      });
      captureDate(command, (value) => {
        date = value;
      });
      const output = await this.send<{ ETag?: string }>(command);
      const serverTime = date === undefined ? Number.NaN : Date.parse(date);
      return {
        ok: true,
        etag: output.ETag ?? '',
        serverTimeAtSend: Number.isFinite(serverTime)
          ? serverTime - (performance.now() - sentAt)
          : null,
      };
    } catch (error) {
      if (classify(error).kind === 'precondition') return { ok: false };
      throw error;
    }
  }

  /** An unconditional PUT (idempotent: the same bytes again change nothing). */
  async put(
    key: string,
    body: string,
    metadata: Record<string, string>,
    operation: string,
  ): Promise<string> {
    return this.idempotent(operation, async () => {
      const outcome = await this.putOnce(key, body, metadata);
      if (!outcome.ok) throw new BackendError(ADAPTER_NAME, `${operation}: unexpected 412`);
      return outcome.etag;
    });
  }

  /** Server-side copy with new metadata (the bytes stay exactly as they are). */
  copy(
    from: string,
    to: string,
    metadata: Record<string, string>,
    operation: string,
  ): Promise<boolean> {
    return this.idempotent(
      operation,
      async () => {
        await this.send(
          new CopyObjectCommand({
            Bucket: this.bucket,
            Key: to,
            CopySource: `${this.bucket}/${from}`,
            MetadataDirective: 'REPLACE',
            Metadata: metadata,
          }),
        );
        return true;
      },
      () => false,
    );
  }

  /** Deletes a key; a missing one is not an error (DELETE is idempotent on S3). */
  async delete(key: string, operation: string): Promise<void> {
    await this.idempotent(
      operation,
      async () => {
        await this.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }));
      },
      () => undefined,
    );
  }

  /** Deletes keys in batches of 1000 (one DeleteObjects request each). */
  async deleteMany(keys: readonly string[], operation: string): Promise<void> {
    for (let start = 0; start < keys.length; start += 1000) {
      const batch = keys.slice(start, start + 1000);
      await this.idempotent(operation, async () => {
        const output = await this.send<{ Errors?: Array<{ Key?: string; Code?: string }> }>(
          new DeleteObjectsCommand({
            Bucket: this.bucket,
            Delete: { Objects: batch.map((key) => ({ Key: key })), Quiet: true },
          }),
        );
        const failed = (output.Errors ?? []).filter((entry) => entry.Code !== 'NoSuchKey');
        if (failed.length > 0) {
          throw new BackendError(
            ADAPTER_NAME,
            `${operation}: ${failed.length} of ${batch.length} keys were not deleted (${failed[0]?.Code ?? 'unknown'})`,
          );
        }
      });
    }
  }

  /** One page of a listing (up to `maxKeys`, at most 1000 on S3). */
  list(
    prefix: string,
    options: {
      startAfter?: string;
      maxKeys?: number;
      delimiter?: string;
      token?: string | null;
    },
    operation: string,
  ): Promise<ListPage> {
    return this.idempotent(operation, async () => {
      const output = await this.send<{
        Contents?: Array<{ Key?: string; LastModified?: Date; ETag?: string }>;
        CommonPrefixes?: Array<{ Prefix?: string }>;
        IsTruncated?: boolean;
        NextContinuationToken?: string;
      }>(
        new ListObjectsV2Command({
          Bucket: this.bucket,
          Prefix: prefix,
          ...(options.startAfter === undefined ? {} : { StartAfter: options.startAfter }),
          ...(options.maxKeys === undefined ? {} : { MaxKeys: options.maxKeys }),
          ...(options.delimiter === undefined ? {} : { Delimiter: options.delimiter }),
          ...(options.token == null ? {} : { ContinuationToken: options.token }),
        }),
      );
      return {
        objects: (output.Contents ?? []).flatMap((entry) =>
          entry.Key === undefined
            ? []
            : [
                {
                  key: entry.Key,
                  lastModified: entry.LastModified?.getTime() ?? 0,
                  etag: entry.ETag ?? '',
                },
              ],
        ),
        prefixes: (output.CommonPrefixes ?? []).flatMap((entry) =>
          entry.Prefix === undefined ? [] : [entry.Prefix],
        ),
        nextToken: output.IsTruncated === true ? (output.NextContinuationToken ?? null) : null,
      };
    });
  }

  /**
   * Every object under `prefix`, in key order (one LIST request per 1000 keys). With
   * `delimiter: '/'`, only the objects right under it: deeper keys (a nested prefix's) come
   * back as common prefixes, which are dropped, so they cost one entry each, not a walk.
   */
  async listAll(
    prefix: string,
    operation: string,
    options: { startAfter?: string; delimiter?: string } = {},
  ): Promise<ListedObject[]> {
    const { startAfter, delimiter } = options;
    const objects: ListedObject[] = [];
    let token: string | null = null;
    do {
      const page: ListPage = await this.list(
        prefix,
        {
          token,
          ...(token === null && startAfter !== undefined ? { startAfter } : {}),
          ...(delimiter === undefined ? {} : { delimiter }),
        },
        operation,
      );
      objects.push(...page.objects);
      token = page.nextToken;
    } while (token !== null);
    return objects;
  }
}

function info(output: {
  ETag?: string;
  Metadata?: Record<string, string>;
  LastModified?: Date;
}): ObjectInfo {
  return {
    etag: output.ETag ?? '',
    metadata: output.Metadata ?? {},
    lastModified: output.LastModified?.getTime() ?? 0,
  };
}

/**
 * Ceph RGW 16 compares `If-Match` with the ETag without its quotes: the SDK sends the ETag
 * as S3 returns it (quoted), so every conditional update would fail. Added to the command
 * at the build step, after the SDK has serialized the header; the client is left alone.
 */
/** Hands the `Date` header of the command's reply to `found` (the command's own middleware). */
export function captureDate(command: Sendable, found: (date: string | undefined) => void): void {
  const middleware = (next: (args: unknown) => Promise<unknown>) => async (args: unknown) => {
    const result = await next(args);
    const headers = (result as { response?: { headers?: Record<string, string> } }).response
      ?.headers;
    found(headers?.date ?? headers?.Date);
    return result;
  };
  command.middlewareStack.add(
    middleware as never,
    { step: 'deserialize', name: 'keepsakeReplyDate', override: true } as never,
  );
}

function addUnquotedIfMatch(command: Sendable): void {
  const middleware = (next: (args: unknown) => Promise<unknown>) => async (args: unknown) => {
    const request = (args as { request?: { headers?: Record<string, string> } }).request;
    const headers = request?.headers;
    if (headers !== undefined) {
      for (const name of Object.keys(headers)) {
        if (name.toLowerCase() === 'if-match') {
          headers[name] = headers[name]!.replace(/^"(.*)"$/, '$1');
        }
      }
    }
    return next(args);
  };
  command.middlewareStack.add(
    middleware as never,
    { step: 'build', name: 'keepsakeUnquotedIfMatch', override: true } as never,
  );
}
