/**
 * F1, E9: the owner lease's renewals, on a thread of their own (see owner-liveness.ts). A
 * stalled event loop of the adapter's thread (a long GC pause, a CPU-bound tool) does not
 * stop them; the end of the process does. Its own S3Client, made from the adapter's options
 * (a client passed in cannot move to another thread). Self-contained (node and the SDK
 * only): it is loaded by path, from dist or, in the package's tests, from src.
 */

import { parentPort, workerData } from 'node:worker_threads';
import { DeleteObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';

interface LeaseWorkerData {
  readonly clientConfig: ConstructorParameters<typeof S3Client>[0];
  readonly bucket: string;
  readonly key: string;
  readonly renewIntervalMs: number;
  readonly requestTimeoutMs: number;
}

const data = workerData as LeaseWorkerData;
const client = new S3Client(data.clientConfig ?? {});
let timer: ReturnType<typeof setTimeout> | null = null;
let stopping = false;

async function renew(): Promise<void> {
  // The next renewal is due an interval after this one started, however long this one takes
  // (a slow reply must not age the lease by its own length).
  if (!stopping) timer = setTimeout(() => void renew(), data.renewIntervalMs);
  try {
    await client.send(
      new PutObjectCommand({ Bucket: data.bucket, Key: data.key, Body: '', ContentLength: 0 }),
      { abortSignal: AbortSignal.timeout(data.requestTimeoutMs) },
    );
    parentPort?.postMessage({ type: 'renewed' });
  } catch (error) {
    // The next renewal tries again; the lease only lapses after several are missed.
    parentPort?.postMessage({ type: 'failed', message: String(error) });
  }
}

parentPort?.on('message', (message: { type?: string }) => {
  if (message.type !== 'stop') return;
  stopping = true;
  if (timer !== null) clearTimeout(timer);
  // A closed owner is gone at once: its lease is removed, not left to lapse.
  void client
    .send(new DeleteObjectCommand({ Bucket: data.bucket, Key: data.key }), {
      abortSignal: AbortSignal.timeout(data.requestTimeoutMs),
    })
    .catch(() => undefined)
    .finally(() => {
      client.destroy();
      parentPort?.postMessage({ type: 'stopped' });
      parentPort?.close();
    });
});

void renew();
