/**
 * F1, E9: the owner leases' renewals, on a thread of their own (see owner-liveness.ts). A
 * stalled event loop of the adapters' thread (a long GC pause, a CPU-bound tool) does not
 * stop them; the end of the process does. One such thread per process, whatever the number
 * of adapters: each lease is added with the settings of the client its adapter made (a
 * client passed in cannot move to another thread), and the thread keeps one S3Client per
 * distinct settings. Self-contained (node and the SDK only): it is loaded by path, from
 * dist or, in the package's tests, from src.
 */

import { parentPort } from 'node:worker_threads';
import { DeleteObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';

/** What the adapter's thread asks: start renewing a lease, or stop and remove it. */
type LeaseRequest =
  | {
      readonly type: 'add';
      readonly id: string;
      readonly clientConfig: ConstructorParameters<typeof S3Client>[0];
      readonly bucket: string;
      readonly key: string;
      readonly renewIntervalMs: number;
      readonly requestTimeoutMs: number;
    }
  | { readonly type: 'remove'; readonly id: string };

interface Lease {
  readonly request: Extract<LeaseRequest, { type: 'add' }>;
  readonly client: S3Client;
  timer: ReturnType<typeof setTimeout> | null;
  removed: boolean;
}

const clients = new Map<string, { client: S3Client; leases: number }>();
const leases = new Map<string, Lease>();

function clientFor(config: ConstructorParameters<typeof S3Client>[0]): S3Client {
  const key = JSON.stringify(config);
  const known = clients.get(key);
  if (known !== undefined) {
    known.leases++;
    return known.client;
  }
  const client = new S3Client(config ?? {});
  clients.set(key, { client, leases: 1 });
  return client;
}

function releaseClient(config: ConstructorParameters<typeof S3Client>[0]): void {
  const key = JSON.stringify(config);
  const known = clients.get(key);
  if (known === undefined || --known.leases > 0) return;
  clients.delete(key);
  known.client.destroy();
}

async function renew(lease: Lease): Promise<void> {
  const { request } = lease;
  // The next renewal is due an interval after this one started, however long this one takes
  // (a slow reply must not age the lease by its own length).
  if (!lease.removed) lease.timer = setTimeout(() => void renew(lease), request.renewIntervalMs);
  try {
    await lease.client.send(
      new PutObjectCommand({
        Bucket: request.bucket,
        Key: request.key,
        Body: '',
        ContentLength: 0,
      }),
      { abortSignal: AbortSignal.timeout(request.requestTimeoutMs) },
    );
    parentPort?.postMessage({ type: 'renewed', id: request.id });
  } catch (error) {
    // The next renewal tries again; the lease only lapses after several are missed.
    parentPort?.postMessage({ type: 'failed', id: request.id, message: String(error) });
  }
}

parentPort?.on('message', (message: LeaseRequest) => {
  if (message.type === 'add') {
    const lease: Lease = {
      request: message,
      client: clientFor(message.clientConfig),
      timer: null,
      removed: false,
    };
    leases.set(message.id, lease);
    void renew(lease);
    return;
  }
  const lease = leases.get(message.id);
  if (lease === undefined) {
    parentPort?.postMessage({ type: 'removed', id: message.id });
    return;
  }
  leases.delete(message.id);
  lease.removed = true;
  if (lease.timer !== null) clearTimeout(lease.timer);
  const { request } = lease;
  // A closed owner is gone at once: its lease is removed, not left to lapse.
  void lease.client
    .send(new DeleteObjectCommand({ Bucket: request.bucket, Key: request.key }), {
      abortSignal: AbortSignal.timeout(request.requestTimeoutMs),
    })
    .catch(() => undefined)
    .finally(() => {
      releaseClient(request.clientConfig);
      parentPort?.postMessage({ type: 'removed', id: message.id });
    });
});
