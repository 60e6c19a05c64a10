import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { HeadObjectCommand, type S3ClientConfig } from '@aws-sdk/client-s3';
import type { AdapterLiveness, OwnerState } from '@keepsake/core';
import { classify } from './errors.js';
import { captureDate, type S3Requests } from './requests.js';

const OWNER_PREFIX = 's3-owner:';

export interface OwnerLeaseSettings {
  readonly renewIntervalMs: number;
  readonly expireAfterMs: number;
}

/**
 * F1, E9: whether the S3 adapter that began a run is alive, from its lease: one empty
 * object per adapter instance, `<prefix>/owner/<id>`, PUT every `renewIntervalMs` by a
 * worker thread with its own client (lease-worker.ts), so a stalled event loop keeps
 * renewing and a killed process stops. An owner is `gone` when its lease is older than
 * `expireAfterMs` by the server's clock (the HEAD reply's `Date` against the lease's
 * LastModified, both the server's, in whole seconds: a second is added), or when its lease
 * was removed (the adapter closed; an adapter only begins runs once its first lease is
 * written). `unknown` when the HEAD fails or the id is not an S3 owner's. Known limits: a
 * process stopped as a whole (SIGSTOP, a paused VM) or cut off from S3 for longer than
 * `expireAfterMs` reads as gone.
 */
export class S3OwnerLiveness implements AdapterLiveness {
  readonly ownerId = `${OWNER_PREFIX}${randomBytes(12).toString('hex')}`;
  private worker: Worker | null = null;
  private stopped = false;

  private readonly requests: S3Requests;
  private readonly root: string;
  private readonly settings: OwnerLeaseSettings;

  constructor(requests: S3Requests, root: string, settings: OwnerLeaseSettings) {
    this.requests = requests;
    this.root = root;
    this.settings = settings;
  }

  private leaseKey(ownerId: string): string {
    return `${this.root}/owner/${ownerId.slice(OWNER_PREFIX.length)}`;
  }

  /** Starts the renewals; resolves once the first lease is written (rejects if it is not). */
  start(clientConfig: S3ClientConfig, requestTimeoutMs: number): Promise<void> {
    this.stopped = false;
    const here = new URL('./lease-worker.js', import.meta.url);
    // The package's own tests run from src, where the worker is TypeScript (Node strips it).
    const script = existsSync(here) ? here : new URL('./lease-worker.ts', import.meta.url);
    const worker = new Worker(script, {
      workerData: {
        clientConfig,
        bucket: this.requests.bucket,
        key: this.leaseKey(this.ownerId),
        renewIntervalMs: this.settings.renewIntervalMs,
        requestTimeoutMs,
      },
    });
    // Never keeps the process alive: its end is what makes the lease lapse.
    worker.unref();
    this.worker = worker;
    return new Promise<void>((resolve, reject) => {
      const onMessage = (message: { type?: string; message?: string }) => {
        if (message.type === 'renewed') {
          worker.off('message', onMessage);
          resolve();
        } else if (message.type === 'failed') {
          worker.off('message', onMessage);
          void this.stop();
          reject(new Error(`the owner lease could not be written: ${message.message}`));
        }
      };
      worker.on('message', onMessage);
      worker.once('error', reject);
    });
  }

  /** Stops the renewals and removes the lease. Idempotent. */
  async stop(): Promise<void> {
    const worker = this.worker;
    if (worker === null || this.stopped) return;
    this.stopped = true;
    const stopped = new Promise<void>((resolve) => {
      worker.on('message', (message: { type?: string }) => {
        if (message.type === 'stopped') resolve();
      });
      worker.once('exit', () => resolve());
      worker.once('error', () => resolve());
    });
    worker.postMessage({ type: 'stop' });
    await Promise.race([stopped, new Promise((resolve) => setTimeout(resolve, 5_000).unref())]);
    await worker.terminate();
  }

  async ownerState(ownerId: string): Promise<OwnerState> {
    if (ownerId === this.ownerId) return this.stopped ? 'gone' : 'alive';
    if (!/^s3-owner:[0-9a-f]{24}$/.test(ownerId)) return 'unknown';
    let date: string | undefined;
    try {
      const command = new HeadObjectCommand({
        Bucket: this.requests.bucket,
        Key: this.leaseKey(ownerId),
      });
      captureDate(command, (value) => {
        date = value;
      });
      const output = await this.requests.send<{ LastModified?: Date }>(command);
      const now = date === undefined ? Number.NaN : Date.parse(date);
      const renewed = output.LastModified?.getTime();
      if (!Number.isFinite(now) || renewed === undefined) return 'unknown';
      // Both in whole seconds of the server's clock: the lease may be up to a second younger,
      // so it is older than expireAfterMs for certain once this difference reaches it.
      return now - renewed - 1_000 >= this.settings.expireAfterMs ? 'gone' : 'alive';
    } catch (error) {
      // Removed: its adapter closed (a lease is written before the adapter begins a run).
      return classify(error).kind === 'missing' ? 'gone' : 'unknown';
    }
  }
}
