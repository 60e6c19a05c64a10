import type { StorageAdapter } from '@keepsake/core';

/**
 * How the suite gets adapters. Shape agreed with the adapter packages; do not change it
 * without a new major version of this package.
 */
export interface ConformanceInitializer {
  /** Shown in the suite name and the clause report ("memory", "fs", "redis"…). */
  name: string;
  /** Runs once before any adapter is created (start a server, make a temp directory). */
  setup?(): Promise<void>;
  /** Runs once after every test of the suite (stop the server, remove the directory). */
  teardown?(): Promise<void>;
  /** Two adapters created with the same namespace share data (a restart = a new adapter, same namespace). */
  createAdapter(namespace: string): Promise<StorageAdapter>;
  /** Called with each adapter after its store closed. */
  destroyAdapter?(adapter: StorageAdapter): Promise<void>;
  /** Optional: simulate a machine crash of this namespace between two stores (power loss: drop what was not fsynced). */
  simulateCrash?(namespace: string): Promise<void>;
  /**
   * Optional: remove the session index of this namespace out of band, as an operator or a
   * lost file would (no store is open on it). B7 then checks that the index is rebuilt from
   * the documents instead of restarting from the next save; without this hook that test is
   * reported as a declared gap.
   */
  removeIndex?(namespace: string): Promise<void>;
}

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
   * Random operation sequences the model-based test tries; raise it for a soak run.
   * @default 20
   */
  modelRuns?: number;
}
