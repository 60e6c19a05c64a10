import type { StorageAdapter } from './adapter.js';
import type { Clock } from './clock.js';
import type { KeepsakeError } from './errors.js';
import type {
  Attachment,
  JournalEventType,
  JournalRecord,
  Message,
  MessageContent,
  Session,
  SessionSummary,
} from './schemas.js';

/** E2: when journal appends are made durable. */
export type JournalDurabilityPolicy = 'terminal' | 'group' | 'each';

export interface StoreLimits {
  /** A3: largest serialized session document, in bytes. @default 16 MiB */
  maxDocumentBytes: number;
  /** A3: most messages in one session. @default 100_000 */
  maxMessages: number;
  /** A3: largest serialized journal event, in bytes. @default 1 MiB */
  maxJournalEventBytes: number;
}

export interface SessionStoreOptions {
  adapter: StorageAdapter;
  /** Injectable time source; tests pass a ManualClock so time-based clauses never sleep. @default systemClock */
  clock?: Clock;
  limits?: Partial<StoreLimits>;
  cache?: {
    /** C4: sessions kept in memory; sessions with live runs or unsaved changes are never evicted. @default 500 */
    maxSessions?: number;
  };
  journal?: {
    /** E2: `terminal` fsyncs terminal events only, `group` shares fsyncs, `each` fsyncs every event. @default 'group' */
    durability?: JournalDurabilityPolicy;
  };
  checkpoint?: {
    /** E4: how often a running session is checked for new activity. @default 5000 */
    intervalMs?: number;
    /** E4: a checkpoint is written at least this often while a run is live, to refresh its heartbeat. @default 15000 */
    idleRefreshMs?: number;
  };
  recovery?: {
    /** F1: a pending turn older than this with no live run and no journal activity is repaired. @default 30000 */
    graceMs?: number;
    /** F2: sealed-but-empty journal reads before the marker is demoted. @default 12 */
    maxAttempts?: number;
    /** F2: age after which a pending-retry marker is demoted whatever happened. @default 86_400_000 */
    giveUpMs?: number;
  };
  lifecycle?: {
    /** C2/C5/G6: how long close() waits for memory commits before abandoning them. @default 10000 */
    drainDeadlineMs?: number;
  };
  deltas?: {
    /** Fewest appended-message deltas before a save may rewrite the document in full. @default 64 */
    compactAfter?: number;
    /**
     * A save rewrites the document in full only once the deltas since the last full write
     * weigh at least this many times that write, so the rewrite's cost spread over the
     * deltas stays proportional to what they added (O(1) per appended byte, whatever the
     * history). 0 compacts on `compactAfter` alone. @default 1
     */
    compactRatio?: number;
  };
  /** B2/C1: concurrency of flushAll. @default 8 */
  flushConcurrency?: number;
}

export interface CreateSessionInput {
  /** A1-valid id; a random id when omitted. */
  id?: string;
  title?: string;
  metadata?: Record<string, unknown>;
  messages?: MessageInput[];
  parentId?: string | null;
  /** Unknown fields are kept (A4). */
  [field: string]: unknown;
}

/** A message as callers write it: id and createdAt are filled in when missing. */
export interface MessageInput {
  id?: string | undefined;
  role: Message['role'];
  content: MessageContent;
  createdAt?: number | undefined;
  attachments?: Attachment[] | undefined;
  [field: string]: unknown;
}

export interface SaveOptions {
  /** B3: resolve only once the document is durable. @default false */
  fsync?: boolean;
  /** B7: write the document but leave the session index as it is. @default false */
  skipIndex?: boolean;
  /** B6: set updatedAt to now. Recovery and repair saves pass false. @default true */
  touchUpdatedAt?: boolean;
  /** B5: allow the save to remove stored messages (undo, retry, clear). @default false */
  allowShrink?: boolean;
}

export interface LoadOptions {
  /** B5: load without messages; such a session cannot be saved. @default false */
  summaryOnly?: boolean;
  /**
   * Re-read the stored document when another instance may have changed it (two servers
   * on one backend). The live instance is updated in place unless it has unsaved edits.
   * @default false
   */
  refresh?: boolean;
}

export interface ListOptions {
  /** Opaque cursor from a previous page. */
  cursor?: string | null;
  /** @default 50 */
  limit?: number;
  /** D2: include parents whose id was rotated. @default false */
  includeRotated?: boolean;
}

export interface SessionPage {
  sessions: SessionSummary[];
  nextCursor: string | null;
}

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

export interface BeginRunInput {
  userMessage: MessageInput;
  attachments?: Attachment[];
  /** A1-valid run (and stream) id; random when omitted. */
  runId?: string;
}

export type RunTerminalState =
  | 'completed'
  | 'interrupted-by-user'
  | 'interrupted-by-crash'
  | 'errored'
  | 'tool-limit-reached';

export interface JournalEventInput {
  type: JournalEventType;
  data?: Record<string, unknown>;
  /** Unique within the run; random when omitted. */
  eventId?: string;
}

export interface JournalReadOptions {
  /** Records with sequence greater than this. @default 0 */
  afterSequence?: number;
  /** Records with sequence at most this. */
  upToSequence?: number;
  /** @default 10_000 */
  limit?: number;
}

export interface JournalReadResult {
  records: JournalRecord[];
  exists: boolean;
  /** E3: the journal ended in a torn record that was ignored. */
  tornTail: boolean;
  /** E3: set when the sequence jumps; records stop before the gap. */
  gap: { expected: number; found: number } | null;
  /** E2: a record that does not parse or whose identity does not match its journal; records stop before it. */
  invalidRecord: { sequence: number } | null;
}

export interface RunSummary {
  sessionId: string;
  runId: string;
  lastSequence: number;
  terminalState: RunTerminalState | null;
  exists: boolean;
}

export interface CompleteRunInput {
  /**
   * The assistant messages to write. When omitted, they are built from the journal:
   * streamed tokens become the assistant message, reasoning becomes its display metadata.
   */
  assistantMessages?: MessageInput[];
}

export type CancelOutcome =
  | { cancelled: true; sessionId: string; runId: string }
  | { cancelled: false; reason: 'not-active' | 'already-finished' | 'no-pending-turn' };

export interface RunHandle {
  readonly sessionId: string;
  /** Also the stream id: the fencing token of the pending turn (D4). */
  readonly runId: string;
  readonly streamId: string;
  /** E2: appends one event; resolves with its record once it is as durable as the policy says. */
  append(event: JournalEventInput): Promise<JournalRecord>;
  /** E4: counts activity (tool completions count automatically) for the periodic checkpoint. */
  recordActivity(): void;
  /** E5. Throws RunNotActiveError when the run was fenced out (D4). */
  complete(input?: CompleteRunInput): Promise<Session>;
  /** E6. */
  cancel(): Promise<CancelOutcome>;
  /** E6 with an error marker and terminal state errored. */
  fail(error: { message: string; code?: string }): Promise<CancelOutcome>;
  /** Whether this run still owns its session's pending turn in this process. */
  readonly active: boolean;
}

/** G: a batch-extraction memory provider's handle for one session. */
export interface MemoryAgent {
  commitMemory(context: MemoryCommitContext): Promise<void>;
  /** G7: released when the agent is evicted with nothing left uncommitted. */
  close?(): Promise<void>;
}

export interface MemoryCommitContext {
  sessionId: string;
  fromGeneration: number;
  toGeneration: number;
  signal: AbortSignal;
}

export interface DrainReport {
  committed: string[];
  failed: Array<{ sessionId: string; error: unknown }>;
  abandoned: string[];
}

export interface MemoryLifecycle {
  registerAgent(sessionId: string | null | undefined, agent: MemoryAgent): void;
  unregisterAgent(sessionId: string | null | undefined): void;
  /** G2: returns the new generation (0 for an empty id). */
  markTurnCompleted(
    sessionId: string | null | undefined,
    options?: { agent?: MemoryAgent },
  ): Promise<number>;
  hasUncommittedWork(sessionId: string | null | undefined): Promise<boolean>;
  /** G2–G5: commits the oldest dirty segment; true when a commit succeeded. */
  commit(sessionId: string | null | undefined, options?: { agent?: MemoryAgent }): Promise<boolean>;
  /** G6: waits for commits in flight, then commits what is dirty, within a deadline. */
  drain(options?: {
    deadlineMs?: number;
    agents?: ReadonlyMap<string, MemoryAgent>;
  }): Promise<DrainReport>;
  /** G7: commits, waits for commits in flight, unregisters, closes the agent when clean. */
  evict(sessionId: string | null | undefined): Promise<boolean>;
}

export type StoreEvent =
  | { type: 'warning'; sessionId: string; field: string; message: string }
  | { type: 'quarantine'; sessionId: string; location: string }
  | { type: 'save'; sessionId: string; durationMs: number; fsync: boolean; delta: boolean }
  | { type: 'append'; sessionId: string; runId: string; durationMs: number; durable: boolean }
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
  listRuns(sessionId: string): Promise<string[]>;
  flushAll(): Promise<FlushReport>;
  close(): Promise<CloseReport>;
  readonly closed: boolean;
  on(listener: (event: StoreEvent) => void): () => void;
  /** A2: documents moved aside because they did not parse. */
  quarantined(): ReturnType<StorageAdapter['listQuarantined']>;
}
