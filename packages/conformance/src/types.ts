import type { StorageAdapter } from '@keepsake/core';

/**
 * How the suite gets adapters. Shape agreed with the adapter packages; do not change it
 * without a new major version of this package.
 */
export interface ConformanceInitializer {
  /** Shown in the suite name and the clause report ("memory", "fs", "redis"…). */
  name: string;
  /**
   * Optional: the absolute path of a module whose default export is this initializer,
   * loaded by plain `node` in the suite's real second processes (H1's `sharedAcrossProcesses`
   * check, E2's process kills). It must be runnable JavaScript, or one self-contained
   * TypeScript file (Node strips its types, but does not map `./x.js` imports to `./x.ts`,
   * so a TypeScript file must import nothing relative). With `sharedAcrossProcesses`
   * declared, H1 starts a real second process on it; without it that test is reported "not
   * verified". `keepsake-conformance` sets it to its file.
   *
   * In a second process only `setup()` runs (make it a no-op when the parent already set
   * things up, e.g. read the server's address from an environment variable), then
   * `createAdapter`; `teardown()`, `releaseAdapter` and `destroyNamespace` never run there
   * (the process ends, or is SIGKILLed), so `setup()` must start nothing a child would have
   * to stop.
   */
  initializerModule?: string;
  /** Runs once before any adapter is created (start a server, make a temp directory). */
  setup?(): Promise<void>;
  /**
   * Runs once after every test of the suite, in the test process only (stop the server,
   * remove the directory): never in the second processes of `initializerModule`.
   */
  teardown?(): Promise<void>;
  /** Two adapters created with the same namespace share data (a restart = a new adapter, same namespace). */
  createAdapter(namespace: string): Promise<StorageAdapter>;
  /**
   * Called with each adapter after its store closed, also between the two stores of a
   * restart: release what this one adapter holds (a connection, a file handle) and keep
   * the data. Wiping the namespace here makes every restart test fail with a
   * NotFoundError (the suite then says that this hook is the likely cause).
   */
  releaseAdapter?(adapter: StorageAdapter): Promise<void>;
  /** @deprecated The former name of `releaseAdapter`, same meaning; used when that is absent. */
  destroyAdapter?(adapter: StorageAdapter): Promise<void>;
  /**
   * Called once per namespace a test used, after the test released every adapter: remove
   * the namespace's data (drop the tables, delete the key prefix, remove the directory).
   */
  destroyNamespace?(namespace: string): Promise<void>;
  /**
   * Optional: a machine crash (power loss) of this namespace between two stores: drop
   * everything not yet made durable (a `durable` write, a `group` or `each` journal
   * append, a `sync()`), keep everything that was. Without it the durability tests are
   * reported "not verified (no crash simulation)".
   *
   * Adapters created before the crash: the suite has already severed the crashed store's
   * adapter (no call reaches it afterwards) and releases it later with `close()`, which
   * must still resolve. Other adapters of the namespace that the test keeps using (a second
   * store instance, a raw reader) stand for processes on other machines and must go on
   * working: do not close them. Only adapters created after the crash must see the
   * dropped state. For a file backend, drop unsynced bytes and directory entries; for SQL
   * with a WAL, restore a copy of the database (and WAL) taken at the last durable commit,
   * or run every durable commit with full sync and copy the files then (closing the last
   * connection checkpoints the WAL into the database file, so copy through an open
   * connection, `VACUUM INTO`, never by closing); for a remote server, restart it without
   * what it had not fsynced (or leave the hook out).
   *
   * The suite checks that the hook loses something (issue 42): before each crash a test
   * asks for, it writes one document with `durable: false` through an adapter of its own,
   * and after the test it looks for it. A hook that never lost such a write in the run
   * (a restart of a server that fsyncs every write, a copy that includes everything) proves
   * nothing about durability: the tests that crashed are then reported "not verified: the
   * crash simulation never lost a non-durable write", not passed.
   */
  simulateCrash?(namespace: string): Promise<void>;
  /**
   * Optional: remove the session index of this namespace out of band, as an operator or a
   * lost file would (no store is open on it). B7 then checks that the index is rebuilt from
   * the documents instead of restarting from the next save; without this hook that test is
   * reported as a declared gap.
   */
  removeIndex?(namespace: string): Promise<void>;
  /**
   * Optional FAULT INJECTION inside the backend, below the adapter interface: the next I/O
   * the adapter makes for `target` in `namespace` (its session documents or its session
   * index) fails once. `kind` says how (`transient` when not given): a `transient` fault is
   * one a retry may get past (EIO, a busy lock, a dropped connection, a 503); a `permanent`
   * one is not (a permission error, a malformed request, a 403 or 400). The model-based
   * section (B2) then checks that a fault inside the adapter reaches the application as a
   * typed rejection of the one call that met it, or not at all, never as an unhandled
   * rejection, and that the call reports what actually happened; B2's retryability tests
   * check that a transient fault surfaces as retryable (`isRetryable: true`) and a
   * permanent one as not. Returns a function that removes the fault if nothing met it, or
   * null when this backend cannot inject it; without the hook those runs skip the fault.
   * A hook that can inject `permanent` faults says so in `backendFaultKinds`.
   */
  injectBackendFault?(
    namespace: string,
    target: BackendFaultTarget,
    kind?: BackendFaultKind,
  ): (() => void) | null | Promise<(() => void) | null>;
  /**
   * The kinds of fault `injectBackendFault` can inject (B2's retryability tests ask only for
   * these); a hook written before `kind` existed injects transient faults only.
   * @default ['transient'] when `injectBackendFault` is given
   */
  backendFaultKinds?: readonly BackendFaultKind[];
}

/** Where `injectBackendFault` makes the backend fail. */
export type BackendFaultTarget = 'documents' | 'index';

/**
 * How `injectBackendFault` makes the backend fail: `transient` (a retry may succeed: EIO, a
 * busy lock, a dropped connection) or `permanent` (it cannot: a permission error, a
 * malformed request).
 */
export type BackendFaultKind = 'transient' | 'permanent';

/** The groups of clauses, one export each. */
export type AreaName =
  | 'identityAndInput'
  | 'saves'
  | 'flushAndShutdown'
  | 'locks'
  | 'runsAndJournal'
  | 'recovery'
  | 'memoryLifecycle'
  | 'capabilities'
  | 'modelBased'
  | 'badInput';

export interface ConformanceOptions {
  /**
   * Run only the tests of these clauses (ids like "B4"); the others are not registered.
   * @default every clause
   */
  clauses?: readonly string[];
  /**
   * Run only these areas (with `runConformance`).
   * @default every area
   */
  areas?: readonly AreaName[];
  /**
   * Timeout of one test. Networked backends may need more than the default.
   * @default 20000
   */
  testTimeoutMs?: number;
  /**
   * Runs of each model-based test (random programs of concurrent operations checked
   * against a reference model); raise it for a soak run. The environment variable
   * KEEPSAKE_MODEL_RUNS overrides it (see the README's model-based section).
   * @default 20
   */
  modelRuns?: number;
}
