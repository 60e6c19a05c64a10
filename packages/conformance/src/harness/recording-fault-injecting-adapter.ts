import {
  type AdapterLiveness,
  BackendUnavailableError,
  REQUIRED_ADAPTER_PRIMITIVES,
  type StorageAdapter,
  type StorageAdapterV1,
} from '@keepsake/core';

/** The primitives of StorageAdapterV1 (everything but the read-only properties). */
export const ADAPTER_METHODS = [
  ...REQUIRED_ADAPTER_PRIMITIVES,
  'readQuarantined',
] as const satisfies ReadonlyArray<keyof StorageAdapterV1>;

export type AdapterMethod = (typeof ADAPTER_METHODS)[number];

/** One call the store made to the adapter, as the recording proxy saw it. */
export interface AdapterCall {
  readonly method: AdapterMethod;
  readonly args: readonly unknown[];
  /** Position in the adapter's call log when the call started and when it settled. */
  readonly startedAt: number;
  settledAt: number | null;
  outcome: 'pending' | 'resolved' | 'rejected';
  error?: unknown;
}

/**
 * A fault to inject. Fault injection is the only place the suite replaces real backend
 * behaviour; every fault is explicit in the test that uses it.
 */
export interface Fault {
  method: AdapterMethod;
  /** Only calls whose arguments match; every call when omitted. */
  match?: (args: readonly unknown[]) => boolean;
  /** Throw this instead of calling the adapter. */
  error?: () => unknown;
  /** Hold the call until this promise settles, then let it through. */
  gate?: Promise<unknown>;
  /** Replace the call: receives the arguments and the real call. */
  replace?: (args: readonly unknown[], real: () => Promise<unknown>) => Promise<unknown>;
  /** Apply at most this many times. @default unlimited */
  times?: number;
}

/**
 * A recording, fault-injecting proxy around a real adapter. It forwards every primitive
 * unchanged (same name, same capabilities) and:
 * - records each call (method, arguments, start and settle order) so tests can prove
 *   what the store did or did not send (A1: no call for an invalid id; H1: a delta write);
 * - applies the faults a test injects (a failing save of one session, a journal that
 *   arrives late, a slow read);
 * - can be severed, which makes every later call fail as if its process had died
 *   (restart tests use it so an abandoned store can never write again).
 */
export class RecordingFaultInjectingAdapter implements StorageAdapterV1 {
  readonly specificationVersion = 'v1' as const;
  readonly calls: AdapterCall[] = [];
  private readonly faults: Array<Fault & { used: number }> = [];
  private clock = 0;
  private severed = false;
  /**
   * Optional scheduling point before every primitive (the model-based section hands it to
   * fast-check's scheduler, which then decides the order in which racing store calls reach
   * the backend). Unset, calls go straight through.
   */
  interleave: ((method: AdapterMethod, args: readonly unknown[]) => Promise<void>) | undefined =
    undefined;
  /**
   * Optional primitive: present on the proxy only when the wrapped adapter has it, so a
   * test asking whether the adapter offers it gets the adapter's answer (`declare`: no own
   * property unless assigned).
   */
  declare readonly readQuarantined?: NonNullable<StorageAdapterV1['readQuarantined']>;
  /** How many times this adapter was asked whether a run's owner is alive (F1). */
  ownerChecks = 0;
  /** F1: the wrapped adapter's liveness, when it has one, counting the questions asked. */
  declare readonly liveness?: AdapterLiveness;
  /** How many appends the wrapped adapter's `watchLog` pushed to this adapter's watchers (E9). */
  logPushes = 0;
  /** E9: the wrapped adapter's push of appends, when it has one, counting what it pushes. */
  declare readonly watchLog?: NonNullable<StorageAdapterV1['watchLog']>;

  constructor(readonly inner: StorageAdapter) {
    if (typeof inner.readQuarantined === 'function') {
      this.readQuarantined = (...args) =>
        this.invoke('readQuarantined', args) as Promise<string | null>;
    }
    const watchLog = inner.watchLog;
    if (typeof watchLog === 'function') {
      this.watchLog = (sessionId, runId, onAppend) =>
        watchLog.call(inner, sessionId, runId, () => {
          // A severed adapter's process is gone: nothing reaches its watchers any more.
          if (this.severed) return;
          this.logPushes++;
          onAppend();
        });
    }
    const liveness = inner.liveness;
    if (liveness !== undefined) {
      this.liveness = {
        get ownerId() {
          return liveness.ownerId;
        },
        ownerState: (ownerId) => {
          this.ownerChecks++;
          return liveness.ownerState(ownerId);
        },
      };
    }
  }

  get name(): string {
    return this.inner.name;
  }

  get capabilities(): StorageAdapter['capabilities'] {
    return this.inner.capabilities;
  }

  /** Adds a fault; returns a function that removes it. */
  inject(fault: Fault): () => void {
    const entry = { ...fault, used: 0 };
    this.faults.push(entry);
    return () => {
      const index = this.faults.indexOf(entry);
      if (index >= 0) this.faults.splice(index, 1);
    };
  }

  /** Every later call (except close) fails: the process that owned this adapter is gone. */
  sever(): void {
    this.severed = true;
  }

  get isSevered(): boolean {
    return this.severed;
  }

  clearCalls(): void {
    this.calls.length = 0;
  }

  callsTo(method: AdapterMethod): AdapterCall[] {
    return this.calls.filter((call) => call.method === method);
  }

  /**
   * B7: every index update, whichever way it reached the adapter: a `putIndexEntry` call,
   * or a `putDocument` that carried an `indexEntry` (adapters declaring indexWithDocument).
   */
  indexUpdates(): AdapterCall[] {
    return this.calls.filter(
      (call) =>
        call.method === 'putIndexEntry' ||
        (call.method === 'putDocument' &&
          (call.args[3] as { indexEntry?: unknown } | undefined)?.indexEntry !== undefined),
    );
  }

  private async invoke(method: AdapterMethod, args: unknown[]): Promise<unknown> {
    const call: AdapterCall = {
      method,
      args,
      startedAt: this.clock++,
      settledAt: null,
      outcome: 'pending',
    };
    this.calls.push(call);
    try {
      const result = await this.dispatch(method, args);
      call.outcome = 'resolved';
      return result;
    } catch (error) {
      call.outcome = 'rejected';
      call.error = error;
      throw error;
    } finally {
      call.settledAt = this.clock++;
    }
  }

  private async dispatch(method: AdapterMethod, args: unknown[]): Promise<unknown> {
    if (this.interleave !== undefined && method !== 'close') await this.interleave(method, args);
    if (this.severed && method !== 'close') {
      throw new BackendUnavailableError(this.name, 'the process that owned this adapter is gone');
    }
    const real = () =>
      (this.inner[method] as (...values: unknown[]) => Promise<unknown>).apply(this.inner, args);
    const fault = this.faults.find(
      (candidate) =>
        candidate.method === method &&
        (candidate.times === undefined || candidate.used < candidate.times) &&
        (candidate.match === undefined || candidate.match(args)),
    );
    if (fault === undefined) return real();
    fault.used++;
    if (fault.gate !== undefined) await fault.gate;
    if (fault.error !== undefined) throw fault.error();
    if (fault.replace !== undefined) return fault.replace(args, real);
    return real();
  }

  open(...args: Parameters<StorageAdapterV1['open']>) {
    return this.invoke('open', args) as ReturnType<StorageAdapterV1['open']>;
  }
  getDocument(...args: Parameters<StorageAdapterV1['getDocument']>) {
    return this.invoke('getDocument', args) as ReturnType<StorageAdapterV1['getDocument']>;
  }
  hasDocument(...args: Parameters<StorageAdapterV1['hasDocument']>) {
    return this.invoke('hasDocument', args) as ReturnType<StorageAdapterV1['hasDocument']>;
  }
  putDocument(...args: Parameters<StorageAdapterV1['putDocument']>) {
    return this.invoke('putDocument', args) as ReturnType<StorageAdapterV1['putDocument']>;
  }
  deleteDocument(...args: Parameters<StorageAdapterV1['deleteDocument']>) {
    return this.invoke('deleteDocument', args) as ReturnType<StorageAdapterV1['deleteDocument']>;
  }
  listDocuments(...args: Parameters<StorageAdapterV1['listDocuments']>) {
    return this.invoke('listDocuments', args) as ReturnType<StorageAdapterV1['listDocuments']>;
  }
  quarantineDocument(...args: Parameters<StorageAdapterV1['quarantineDocument']>) {
    return this.invoke('quarantineDocument', args) as ReturnType<
      StorageAdapterV1['quarantineDocument']
    >;
  }
  listQuarantined(...args: Parameters<StorageAdapterV1['listQuarantined']>) {
    return this.invoke('listQuarantined', args) as ReturnType<StorageAdapterV1['listQuarantined']>;
  }
  putIndexEntry(...args: Parameters<StorageAdapterV1['putIndexEntry']>) {
    return this.invoke('putIndexEntry', args) as ReturnType<StorageAdapterV1['putIndexEntry']>;
  }
  deleteIndexEntry(...args: Parameters<StorageAdapterV1['deleteIndexEntry']>) {
    return this.invoke('deleteIndexEntry', args) as ReturnType<
      StorageAdapterV1['deleteIndexEntry']
    >;
  }
  replaceIndex(...args: Parameters<StorageAdapterV1['replaceIndex']>) {
    return this.invoke('replaceIndex', args) as ReturnType<StorageAdapterV1['replaceIndex']>;
  }
  listIndex(...args: Parameters<StorageAdapterV1['listIndex']>) {
    return this.invoke('listIndex', args) as ReturnType<StorageAdapterV1['listIndex']>;
  }
  appendLog(...args: Parameters<StorageAdapterV1['appendLog']>) {
    return this.invoke('appendLog', args) as ReturnType<StorageAdapterV1['appendLog']>;
  }
  readLog(...args: Parameters<StorageAdapterV1['readLog']>) {
    return this.invoke('readLog', args) as ReturnType<StorageAdapterV1['readLog']>;
  }
  listLogs(...args: Parameters<StorageAdapterV1['listLogs']>) {
    return this.invoke('listLogs', args) as ReturnType<StorageAdapterV1['listLogs']>;
  }
  deleteLogs(...args: Parameters<StorageAdapterV1['deleteLogs']>) {
    return this.invoke('deleteLogs', args) as ReturnType<StorageAdapterV1['deleteLogs']>;
  }
  deleteLog(...args: Parameters<StorageAdapterV1['deleteLog']>) {
    return this.invoke('deleteLog', args) as ReturnType<StorageAdapterV1['deleteLog']>;
  }
  sync(...args: Parameters<StorageAdapterV1['sync']>) {
    return this.invoke('sync', args) as ReturnType<StorageAdapterV1['sync']>;
  }
  close(...args: Parameters<StorageAdapterV1['close']>) {
    return this.invoke('close', args) as ReturnType<StorageAdapterV1['close']>;
  }
}
