/** What one look at the backend found. */
export type BackendReadinessResult =
  | { readonly ready: true; readonly checkedAt: number }
  | {
      readonly ready: false;
      readonly checkedAt: number;
      /** The typed error's name (`BackendUnavailableError`…), or `timeout`. */
      readonly reason: string;
      readonly message: string;
    };

export interface BackendReadinessOptions {
  /** One cheap read per storage root (a stat, an EXISTS, a HEAD); rejects when unreachable. */
  readonly probe: () => Promise<void>;
  /** A result is reused this long, so probes cost the backend one read per interval whatever the traffic. */
  readonly cacheMs: number;
  /** A probe that takes longer counts as unreachable: a black-holed backend must not hang the probe. */
  readonly timeoutMs: number;
  readonly now?: () => number;
}

/**
 * Whether the backend answers, for `/readyz`: a store whose Redis is down answers every API
 * call 503, so an instance in that state should leave the load balancer's rotation. One
 * probe at a time (concurrent readiness requests share it), bounded by `timeoutMs`, its
 * result reused for `cacheMs`.
 */
export class BackendReadiness {
  private last: BackendReadinessResult | null = null;
  private inFlight: Promise<BackendReadinessResult> | null = null;
  private readonly now: () => number;

  constructor(private readonly options: BackendReadinessOptions) {
    this.now = options.now ?? Date.now;
  }

  check(): Promise<BackendReadinessResult> {
    const last = this.last;
    if (last !== null && this.now() - last.checkedAt < this.options.cacheMs) {
      return Promise.resolve(last);
    }
    this.inFlight ??= this.probeOnce().finally(() => {
      this.inFlight = null;
    });
    return this.inFlight;
  }

  private async probeOnce(): Promise<BackendReadinessResult> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), this.options.timeoutMs);
    });
    const probing = this.options.probe().then(
      () => null,
      (error: unknown) => error,
    );
    const outcome = await Promise.race([probing, timeout]).finally(() => clearTimeout(timer));
    const checkedAt = this.now();
    let result: BackendReadinessResult;
    if (outcome === null) {
      result = { ready: true, checkedAt };
    } else if (outcome === 'timeout') {
      result = {
        ready: false,
        checkedAt,
        reason: 'timeout',
        message: `the backend did not answer within ${this.options.timeoutMs} ms`,
      };
    } else {
      const error = outcome instanceof Error ? outcome : new Error(String(outcome));
      result = { ready: false, checkedAt, reason: error.name, message: error.message };
    }
    this.last = result;
    return result;
  }
}
