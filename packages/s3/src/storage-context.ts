import type { KeyLayout } from './keys.js';
import type { S3Requests } from './requests.js';

/**
 * What the adapter's parts share: the requests (bucket, deadline, retries), the key
 * layout, write tokens, and whether the endpoint's conditional writes can be trusted.
 */
export interface StorageContext {
  readonly requests: S3Requests;
  readonly keys: KeyLayout;
  /** A token no other write of any process uses (see write-tokens.ts). */
  nextWriteToken(): string;
  /**
   * True in the unsafe single-writer mode on an endpoint that ignores conditional writes:
   * conditions are checked by this process (HEAD, then PUT, one write per key at a time).
   */
  readonly checksConditionsItself: () => boolean;
}

/**
 * Runs `work` after the previous work queued under the same key settled: one write per key
 * at a time in this process (only needed where the endpoint does not check conditions).
 */
export class KeyedQueue {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    const result = previous.then(work, work);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }
}
