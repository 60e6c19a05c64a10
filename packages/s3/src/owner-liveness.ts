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
 * worker thread with its own clients (lease-worker.ts; one thread per process, shared by
 * its adapters), so a stalled event loop keeps renewing and a killed process stops. An owner is `gone` when its lease is older than
 * `expireAfterMs` by the server's clock (the HEAD reply's `Date` against the lease's
 * LastModified, both the server's, in whole seconds: a second is added), or when its lease
 * was removed (the adapter closed; an adapter only begins runs once its first lease is
 * written). `unknown` when the HEAD fails or the id is not an S3 owner's. Known limits: a
 * process stopped as a whole (SIGSTOP, a paused VM) or cut off from S3 for longer than
 * `expireAfterMs` reads as gone.
 */
export class S3OwnerLiveness implements AdapterLiveness {
  readonly ownerId = `${OWNER_PREFIX}${randomBytes(12).toString('hex')}`;
  private started = false;
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
  async start(clientConfig: S3ClientConfig, requestTimeoutMs: number): Promise<void> {
    this.stopped = false;
    this.started = true;
    const renewed = leaseThread.add({
      type: 'add',
      id: this.ownerId,
      clientConfig,
      bucket: this.requests.bucket,
      key: this.leaseKey(this.ownerId),
      renewIntervalMs: this.settings.renewIntervalMs,
      requestTimeoutMs,
    });
    try {
      await renewed;
    } catch (error) {
      await this.stop();
      throw error;
    }
  }

  /** Stops the renewals and removes the lease. Idempotent. */
  async stop(): Promise<void> {
    if (!this.started || this.stopped) return;
    this.stopped = true;
    await leaseThread.remove(this.ownerId);
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

/**
 * The process's lease thread: started with the first lease, ended (terminated) once the last
 * is removed, never keeping the process alive on its own.
 */
class LeaseThread {
  private worker: Worker | null = null;
  private readonly waiting = new Map<
    string,
    { resolve: () => void; reject: (error: Error) => void; kind: 'renewed' | 'removed' }
  >();
  private leases = 0;

  add(
    request: { readonly type: 'add'; readonly id: string } & Record<string, unknown>,
  ): Promise<void> {
    const worker = this.ensureWorker();
    this.leases++;
    const renewed = this.waitFor(request.id, 'renewed');
    worker.postMessage(request);
    return renewed;
  }

  async remove(id: string): Promise<void> {
    const worker = this.worker;
    if (worker === null) return;
    const removed = this.waitFor(id, 'removed');
    worker.postMessage({ type: 'remove', id });
    await Promise.race([removed, new Promise((resolve) => setTimeout(resolve, 5_000).unref())]);
    if (--this.leases === 0 && this.worker === worker) {
      this.worker = null;
      await worker.terminate();
    }
  }

  private waitFor(id: string, kind: 'renewed' | 'removed'): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.waiting.set(`${kind}:${id}`, { resolve, reject, kind });
    });
  }

  private ensureWorker(): Worker {
    if (this.worker !== null) return this.worker;
    const here = new URL('./lease-worker.js', import.meta.url);
    // The package's own tests run from src, where the worker is TypeScript (Node strips it).
    const script = existsSync(here) ? here : new URL('./lease-worker.ts', import.meta.url);
    const worker = new Worker(script);
    // Never keeps the process alive: its end is what makes the leases lapse.
    worker.unref();
    worker.on('message', (message: { type?: string; id?: string; message?: string }) => {
      if (message.type === 'renewed' || message.type === 'removed') {
        const key = `${message.type}:${message.id}`;
        this.waiting.get(key)?.resolve();
        this.waiting.delete(key);
      } else if (message.type === 'failed') {
        const key = `renewed:${message.id}`;
        this.waiting
          .get(key)
          ?.reject(new Error(`the owner lease could not be written: ${message.message}`));
        this.waiting.delete(key);
      }
    });
    const fail = (error: Error) => {
      // A thread ended on purpose (the last lease removed) was let go of already.
      if (this.worker !== worker) return;
      this.worker = null;
      this.leases = 0;
      for (const waiter of this.waiting.values()) {
        if (waiter.kind === 'removed') waiter.resolve();
        else waiter.reject(error);
      }
      this.waiting.clear();
    };
    worker.once('error', fail);
    worker.once('exit', () => fail(new Error('the owner lease thread exited')));
    this.worker = worker;
    return worker;
  }
}

const leaseThread = new LeaseThread();
