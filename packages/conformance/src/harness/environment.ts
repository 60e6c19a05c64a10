import {
  type AdapterCapabilities,
  createSessionStore,
  ManualClock,
  type SessionStore,
  type SessionStoreOptions,
  type StorageAdapter,
} from '@keepsake/core';
import type { BackendFaultKind, BackendFaultTarget, ConformanceInitializer } from '../types.js';
import { RecordingFaultInjectingAdapter } from './recording-fault-injecting-adapter.js';

/** What every test of one suite shares: the initializer and the adapter's declarations. */
export interface SuiteContext {
  readonly initializer: ConformanceInitializer;
  /** Name the adapter reports for itself ("memory", "fs"…). */
  readonly adapterName: string;
  readonly capabilities: AdapterCapabilities;
  /** Whether the adapter implements the optional `readQuarantined` primitive (A2). */
  readonly readsQuarantined: boolean;
  readonly modelRuns: number;
  /** The suite's `testTimeoutMs` (the model-based tests scale their own timeout from it). */
  readonly testTimeoutMs: number;
  /**
   * Issue 42: what the crash probes of the run found so far: how many non-durable writes
   * the suite made just before a simulated crash, and how many of them the crash lost.
   */
  readonly crashProbes: { written: number; lost: number };
}

/** One non-durable write made just before a simulated crash (issue 42). */
interface CrashProbe {
  readonly namespace: string;
  readonly id: string;
  readonly text: string;
}

/** Where the probes go: a collection no test of a crash lists without a prefix. */
const PROBE_COLLECTION = 'checkpoints';

/** Store options a test may set; the adapter and (by default) the clock come from the environment. */
export type StoreOverrides = Omit<SessionStoreOptions, 'adapter'>;

export interface OpenedStore {
  readonly store: SessionStore;
  /** The recording, fault-injecting proxy the store writes through. */
  readonly adapter: RecordingFaultInjectingAdapter;
  readonly namespace: string;
}

interface OwnedStore extends OpenedStore {
  disposed: boolean;
  /** Made by the test, not by the initializer: never passed to releaseAdapter. */
  foreign?: boolean;
}

let namespaceCounter = 0;

/** A namespace no other test (in this or another process) uses. */
export function uniqueNamespace(prefix = 'ks'): string {
  const random = Math.random().toString(36).slice(2, 8);
  return `${prefix}-${process.pid.toString(36)}-${(namespaceCounter++).toString(36)}-${random}`;
}

/**
 * One test's world: its own namespace, a manual clock, unique ids, and bookkeeping so
 * every store it opens is closed and every adapter destroyed, whatever the outcome.
 */
export class TestEnvironment {
  readonly namespace = uniqueNamespace();
  /** Time moves only when a test says so; no test sleeps. */
  readonly clock = new ManualClock();
  private idCounter = 0;
  private readonly idPrefix = Math.random().toString(36).slice(2, 7);
  private readonly stores: OwnedStore[] = [];
  private readonly rawAdapters: StorageAdapter[] = [];

  constructor(readonly context: SuiteContext) {}

  get capabilities(): AdapterCapabilities {
    return this.context.capabilities;
  }

  /** A unique, valid id (A1 alphabet). */
  id(prefix = 's'): string {
    return `${prefix}-${this.idPrefix}-${(this.idCounter++).toString(36)}`;
  }

  /** A second namespace of this test (H3 migrations, isolation checks). */
  otherNamespace(): string {
    return uniqueNamespace();
  }

  /** Opens a store on a new adapter of `namespace` (this test's by default). */
  async openStore(
    overrides: StoreOverrides = {},
    namespace = this.namespace,
  ): Promise<OpenedStore> {
    this.usedNamespaces.add(namespace);
    const inner = await this.context.initializer.createAdapter(namespace);
    const adapter = new RecordingFaultInjectingAdapter(inner);
    let store: SessionStore;
    try {
      store = createSessionStore({ clock: this.clock, ...overrides, adapter });
    } catch (error) {
      // Invalid options (A3 tests them): nothing but the adapter to release.
      await inner.close();
      await this.release(inner);
      throw error;
    }
    const owned: OwnedStore = { store, adapter, namespace, disposed: false };
    this.stores.push(owned);
    return owned;
  }

  /**
   * Opens a store on an adapter the test made itself (another backend, for H3). The store
   * is closed with the environment; the adapter is not handed to `releaseAdapter`.
   */
  openStoreOn(inner: StorageAdapter, overrides: StoreOverrides = {}): OpenedStore {
    const adapter = new RecordingFaultInjectingAdapter(inner);
    const store = createSessionStore({ clock: this.clock, ...overrides, adapter });
    const owned: OwnedStore = {
      store,
      adapter,
      namespace: '(foreign)',
      disposed: false,
      foreign: true,
    };
    this.stores.push(owned);
    return owned;
  }

  /**
   * The process that owned `opened` dies (its adapter is severed) but the machine does
   * not: what it wrote without fsync is still there (the page cache survives).
   */
  killProcess(opened: OpenedStore): void {
    opened.adapter.sever();
  }

  /**
   * An adapter on `namespace` that no store uses, opened, for reading back (or planting)
   * what is stored. Closed and destroyed with the environment.
   */
  async rawAdapter(namespace = this.namespace): Promise<StorageAdapter> {
    this.usedNamespaces.add(namespace);
    const adapter = await this.context.initializer.createAdapter(namespace);
    this.rawAdapters.push(adapter);
    await adapter.open();
    return adapter;
  }

  /**
   * The process that owned `opened` dies: its adapter is severed (nothing it still has in
   * flight or in memory can land), then the machine crash of the namespace is simulated
   * when the initializer can (unsynced writes may be dropped).
   */
  async crash(opened: OpenedStore): Promise<void> {
    if (this.context.initializer.simulateCrash === undefined) {
      opened.adapter.sever();
      // Without a power loss, whatever the test then reads back may have survived only in
      // the backend's own memory: the test proves nothing about durability (issue 24).
      this.crashNotSimulated = true;
      return;
    }
    // Issue 42: a hook that loses nothing proves nothing either. Just before the crash, a
    // write the crash may drop (no fsync); after the test, the suite looks for it.
    await this.writeCrashProbe(opened.namespace);
    opened.adapter.sever();
    await this.context.initializer.simulateCrash(opened.namespace);
  }

  private readonly crashProbes: CrashProbe[] = [];

  /** Writes a document with `durable: false` through an adapter of its own. */
  private async writeCrashProbe(namespace: string): Promise<void> {
    const probe: CrashProbe = {
      namespace,
      id: `keepsake-crash-probe-${this.idPrefix}-${this.crashProbes.length}`,
      text: JSON.stringify({ probe: 'written without fsync just before a simulated crash' }),
    };
    const adapter = await this.rawAdapter(namespace);
    const result = await adapter.putDocument(
      PROBE_COLLECTION,
      probe.id,
      { kind: 'full', revision: 1, text: probe.text },
      { expectedRevision: null, durable: false },
    );
    if (result.ok) this.crashProbes.push(probe);
  }

  /**
   * After the test: whether each crash lost its probe, added to the run's count (the
   * document is then removed, so it never outlives the test). Returns whether this test
   * simulated a crash at all.
   */
  async checkCrashProbes(): Promise<boolean> {
    const probes = this.crashProbes.splice(0);
    const counts = this.context.crashProbes;
    for (const probe of probes) {
      const reader = await this.rawAdapter(probe.namespace);
      const stored = await reader.getDocument(PROBE_COLLECTION, probe.id);
      counts.written++;
      if (stored === null || stored.base !== probe.text) counts.lost++;
      if (stored !== null)
        await reader.deleteDocument(PROBE_COLLECTION, probe.id, { durable: true });
    }
    return probes.length > 0;
  }

  /**
   * Set when the test asked for a machine crash the initializer cannot simulate (it has no
   * `simulateCrash`): the suite then reports the test as "not verified (no crash
   * simulation)" instead of passed.
   */
  crashNotSimulated = false;

  /** Set by a test that could not try what it checks (no second process); see `crashNotSimulated`. */
  notVerifiedNote: string | null = null;

  /** `crash`, then a new store on a new adapter of the same namespace (cold cache). */
  async restartAfterCrash(
    opened: OpenedStore,
    overrides: StoreOverrides = {},
  ): Promise<OpenedStore> {
    await this.crash(opened);
    return this.openStore(overrides, opened.namespace);
  }

  /**
   * FAULT INJECTION inside the backend, when the initializer offers it
   * (`injectBackendFault`): the next I/O for `target` fails once. Returns the function that
   * removes the fault, or null when the backend cannot inject it.
   */
  async injectBackendFault(
    target: BackendFaultTarget,
    namespace = this.namespace,
    kind: BackendFaultKind = 'transient',
  ): Promise<(() => void) | null> {
    const { initializer } = this.context;
    if (initializer.injectBackendFault === undefined) return null;
    if (kind !== 'transient' && !(initializer.backendFaultKinds ?? []).includes(kind)) return null;
    return (await initializer.injectBackendFault(namespace, target, kind)) ?? null;
  }

  /** A graceful restart: close the store (flush, drain), then open a new one. */
  async restartGracefully(
    opened: OpenedStore,
    overrides: StoreOverrides = {},
  ): Promise<OpenedStore> {
    await this.closeStore(opened);
    await this.context.initializer.simulateCrash?.(opened.namespace);
    return this.openStore(overrides, opened.namespace);
  }

  /** Closes a store now and destroys its adapter. */
  async closeStore(opened: OpenedStore): Promise<void> {
    const owned = this.stores.find((candidate) => candidate.store === opened.store);
    if (owned === undefined || owned.disposed) return;
    owned.disposed = true;
    await owned.store.close();
    if (owned.foreign !== true) {
      await this.release(owned.adapter.inner);
      this.releasedBeforeTheEnd = true;
    }
  }

  /**
   * Whether the test released an adapter while it went on (closeStore, a restart): then a
   * NotFoundError is most likely the release hook wiping data (issue 24).
   */
  releasedBeforeTheEnd = false;
  private readonly usedNamespaces = new Set<string>();

  /** The initializer's `releaseAdapter` (or its former name, `destroyAdapter`). */
  private async release(adapter: StorageAdapter): Promise<void> {
    const { initializer } = this.context;
    if (initializer.releaseAdapter !== undefined) await initializer.releaseAdapter(adapter);
    else await initializer.destroyAdapter?.(adapter);
  }

  /** Closes every store (newest first) and destroys every adapter this test created. */
  async dispose(): Promise<void> {
    const errors: unknown[] = [];
    for (const owned of [...this.stores].reverse()) {
      if (owned.disposed) continue;
      owned.disposed = true;
      try {
        await owned.store.close();
      } catch (error) {
        // A severed store may fail to close; a live one must not (C2).
        if (!owned.adapter.isSevered) errors.push(error);
      }
      if (owned.foreign === true) continue;
      try {
        await this.release(owned.adapter.inner);
      } catch (error) {
        errors.push(error);
      }
    }
    for (const adapter of this.rawAdapters.splice(0).reverse()) {
      try {
        await adapter.close();
        await this.release(adapter);
      } catch (error) {
        errors.push(error);
      }
    }
    for (const namespace of this.usedNamespaces) {
      try {
        await this.context.initializer.destroyNamespace?.(namespace);
      } catch (error) {
        errors.push(error);
      }
    }
    if (errors.length === 1) throw errors[0];
    if (errors.length > 1)
      throw new AggregateError(errors, 'disposing the test environment failed');
  }
}
