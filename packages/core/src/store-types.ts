import type { StorageAdapter } from './adapter/adapter.js';
import type { KeepsakeError } from './errors/keepsake-error.js';
import type { DrainReport, MemoryLifecycle } from './lifecycle/memory-types.js';
import type { FollowRunItem, FollowRunOptions } from './runs/follow/follow-types.js';
import type {
  BeginRunInput,
  CancelOutcome,
  JournalReadOptions,
  JournalReadResult,
  RunHandle,
  RunSummary,
  RunTerminalState,
} from './runs/run-types.js';
import type {
  CreateSessionInput,
  ListOptions,
  LoadOptions,
  SaveOptions,
  SessionPage,
} from './sessions/session-types.js';
import type { Clock } from './time/clock.js';
import type { Session } from './validation/schemas.js';

export interface StoreDiagnostics {
  cachedSessions: number;
  lockEntries: number;
  liveRuns: number;
  state: 'open' | 'closing' | 'closed';
}

export interface FlushReport {
  /**
   * Sessions re-persisted with fsync. Every cached session is; one without unsaved edits is
   * rewritten at its stored revision and, if another instance wrote a newer revision
   * meanwhile, neither counted nor reported as failed (nothing of this store's was unsaved).
   */
  flushed: number;
  failed: Array<{ sessionId: string; error: KeepsakeError }>;
}

export interface CloseReport {
  flush: FlushReport;
  lifecycle: DrainReport;
}

export type StoreEvent =
  | { type: 'warning'; sessionId: string; field: string; message: string }
  | { type: 'quarantine'; sessionId: string; location: string }
  | { type: 'save'; sessionId: string; durationMs: number; fsync: boolean; delta: boolean }
  | {
      type: 'append';
      sessionId: string;
      runId: string;
      /** The sequence the record was stored at (E2). */
      sequence: number;
      durationMs: number;
      durable: boolean;
    }
  | { type: 'conflict'; sessionId: string }
  | { type: 'recovery'; sessionId: string; runId: string | null; outcome: string }
  | { type: 'checkpoint'; sessionId: string; runId: string }
  | { type: 'run'; sessionId: string; runId: string; state: 'started' | RunTerminalState };

export interface SessionStore {
  readonly adapter: StorageAdapter;
  readonly clock: Clock;
  readonly lifecycle: MemoryLifecycle;
  create(input?: CreateSessionInput, options?: SaveOptions): Promise<Session>;
  load(id: string, options?: LoadOptions): Promise<Session>;
  /**
   * Re-reads a session from storage into its live instance, discarding unsaved local
   * edits: the way out of a RevisionConflictError (reload, re-apply, save).
   */
  reload(id: string): Promise<Session>;
  exists(id: string): Promise<boolean>;
  /** Counts for tests and monitoring: cached sessions, lock entries, live runs. */
  diagnostics(): StoreDiagnostics;
  save(session: Session, options?: SaveOptions): Promise<Session>;
  delete(id: string): Promise<boolean>;
  list(options?: ListOptions): Promise<SessionPage>;
  /**
   * D2: moves the session to a new id under the same lock; the old document stays as its
   * parent. A live run follows (its journal moves with it).
   */
  rename(oldId: string, newId: string): Promise<Session>;
  withLock<T>(id: string, fn: () => Promise<T>): Promise<T>;
  /** B5: the revisions kept before deliberate shrinks. */
  retainedRevisions(id: string): Promise<number[]>;
  loadRetainedRevision(id: string, revision: number): Promise<Session>;
  beginRun(sessionId: string, input: BeginRunInput): Promise<RunHandle>;
  /** The live run handle of a session in this process, if any. */
  activeRun(sessionId: string): RunHandle | null;
  /** E6: cancels the session's active run, also one started by another process. */
  cancelRun(sessionId: string, runId?: string): Promise<CancelOutcome>;
  readJournal(
    sessionId: string,
    runId: string,
    options?: JournalReadOptions,
  ): Promise<JournalReadResult>;
  runSummary(sessionId: string, runId: string): Promise<RunSummary>;
  /**
   * E8: the run with this id wherever it lives (its `sessionId`, journal state, last event),
   * for a server that holds only a run id; null when no stored session has it.
   */
  findRun(runId: string): Promise<RunSummary | null>;
  /**
   * E5, F1: ends a run whose completed turn the session holds but whose journal never got
   * its `done` record (its process died between complete()'s save and the seal): seals the
   * journal with it. Returns the journal's terminal state afterwards, or null while the
   * session does not show the turn answered (pending, live here, ended by a marker). For
   * readers that follow a run: once it says `completed`, the run has ended.
   */
  closeAnsweredRun(sessionId: string, runId: string): Promise<RunTerminalState | null>;
  listRuns(sessionId: string): Promise<string[]>;
  /**
   * H4: the run's records from sequence `after` on, then one ending (completed, cancelled,
   * failed, interrupted; with the session's marker for it), whichever instance streams the
   * run: records this store appends arrive as they are appended, another instance's are
   * read every `runs.followPollMs`, and a run whose process died is repaired by the
   * follower's own loads (F1) once its grace has passed. Damaged records are reported
   * (`skipped`) and read past (E2, E3). Pull-based: a slow consumer costs memory for one
   * page at most. Stops without an ending when `signal` aborts or the store closes.
   */
  followRun(
    sessionId: string,
    runId: string,
    options?: FollowRunOptions,
  ): AsyncGenerator<FollowRunItem>;
  flushAll(): Promise<FlushReport>;
  close(): Promise<CloseReport>;
  readonly closed: boolean;
  on(listener: (event: StoreEvent) => void): () => void;
  /** A2: documents moved aside because they did not parse. */
  quarantined(): ReturnType<StorageAdapter['listQuarantined']>;
}
