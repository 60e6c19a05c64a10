import { randomBytes } from 'node:crypto';
import { CreateBucketCommand, HeadBucketCommand } from '@aws-sdk/client-s3';
import { classify } from './errors.js';
import type { KeyLayout } from './keys.js';
import type { S3Compatibility } from './options.js';
import type { S3Requests } from './requests.js';

/** What the probe found; `problems` is empty when the endpoint honours conditional writes. */
export interface ProbeReport {
  readonly ifNoneMatch: boolean;
  readonly ifMatch: boolean;
  /** Conditional updates work only with the ETag unquoted (Ceph RGW 16). */
  readonly needsUnquotedIfMatch: boolean;
  readonly problems: readonly { capability: string; message: string }[];
}

/**
 * At `open()`: does the endpoint honour the conditional writes every guarantee of this
 * adapter rests on? On a scratch object `probe/<nonce>` (deleted afterwards, 6 requests):
 * 1. `PUT If-None-Match: *` creates it;
 * 2. the same again must be refused (412): an endpoint that overwrites ignores it;
 * 3. `PUT If-Match: <a wrong ETag>` must be refused (412);
 * 4. `PUT If-Match: <its ETag>`, sent as the adapter sends it, must succeed; when it fails
 *    and the unquoted ETag succeeds, the server has Ceph RGW 16's quirk and the report says
 *    to set `compatibility: 'ceph-rgw'`.
 */
export async function probeConditionalWrites(
  requests: S3Requests,
  keys: KeyLayout,
  compatibility: S3Compatibility,
  unquoted: S3Requests,
): Promise<ProbeReport> {
  const key = keys.probe(randomBytes(8).toString('hex'));
  const operation = 'probe conditional writes';
  const put = (body: string, conditions: { ifMatch?: string; ifNoneMatch?: true }) =>
    requests.idempotent(operation, () => requests.putOnce(key, body, {}, conditions));
  try {
    let created = await put('1', { ifNoneMatch: true });
    if (!created.ok) {
      // The nonce is new, so the object can only be this probe's own first attempt: it
      // landed, its reply was lost (a timeout or reset on a slow endpoint), and the retry
      // was refused as it should be. Go on from the ETag it holds.
      const existing = await requests.head(key, operation);
      if (existing === null) {
        throw new Error('the probe key was refused as existing, yet no object is there');
      }
      created = { ok: true, etag: existing.etag, serverTimeAtSend: null };
    }
    const again = await put('2', { ifNoneMatch: true });
    const ifNoneMatch = !again.ok;
    const current = again.ok ? again.etag : created.etag;
    const wrong = await put('3', { ifMatch: '"00000000000000000000000000000000"' });
    const ifMatchRefuses = !wrong.ok;
    const latest = wrong.ok ? wrong.etag : current;
    const right = await put('4', { ifMatch: latest });
    let needsUnquotedIfMatch = false;
    if (!right.ok && compatibility === 'standard') {
      const retried = await unquoted.idempotent(operation, () =>
        unquoted.putOnce(key, '5', {}, { ifMatch: latest }),
      );
      needsUnquotedIfMatch = retried.ok;
    }
    const ifMatch = ifMatchRefuses && right.ok;
    const problems: { capability: string; message: string }[] = [];
    if (!ifNoneMatch) {
      problems.push({
        capability: 'if-none-match',
        message: 'PUT with If-None-Match: * overwrote an existing object',
      });
    }
    if (!ifMatchRefuses) {
      problems.push({
        capability: 'if-match',
        message: 'PUT with If-Match: <a wrong ETag> was accepted',
      });
    }
    if (needsUnquotedIfMatch) {
      problems.push({
        capability: 'if-match-quoted',
        message:
          "PUT with If-Match: <the object's ETag> failed with 412 while the unquoted ETag succeeds (Ceph RGW 16): set the option `compatibility: 'ceph-rgw'`",
      });
    } else if (ifMatchRefuses && !right.ok) {
      problems.push({
        capability: 'if-match',
        message: "PUT with If-Match: <the object's ETag> was refused",
      });
    }
    return { ifNoneMatch, ifMatch, needsUnquotedIfMatch, problems };
  } finally {
    await requests.delete(key, operation).catch(() => undefined);
  }
}

/** Whether the bucket exists (HEAD bucket); creates it when asked to. */
export async function ensureBucket(requests: S3Requests, create: boolean): Promise<boolean> {
  const operation = 'check the bucket';
  const exists = await requests.idempotent(
    operation,
    async () => {
      await requests.send(new HeadBucketCommand({ Bucket: requests.bucket }));
      return true;
    },
    () => false,
  );
  if (exists || !create) return exists;
  await requests.idempotent('create the bucket', async () => {
    try {
      await requests.send(new CreateBucketCommand({ Bucket: requests.bucket }));
    } catch (error) {
      // Created meanwhile by another process: what was wanted.
      const name = (error as { name?: string }).name;
      if (name === 'BucketAlreadyOwnedByYou' || classify(error).kind === 'precondition') return;
      throw error;
    }
  });
  return true;
}
