import type { StorageAdapter } from './adapter/adapter.js';
import { adapterCall } from './adapter/adapter-call.js';
import { readOnlyOverlay } from './adapter/read-only-overlay.js';
import { InvalidInputError } from './errors/input-errors.js';
import { KeepsakeError } from './errors/keepsake-error.js';
import { StoreClosedError } from './errors/lifecycle-errors.js';
import { ReadOnlyError } from './errors/storage-errors.js';
import { Lifecycle } from './lifecycle/lifecycle.js';
import { LockRegistry } from './locks/lock-registry.js';
import {
  assertBeginRunInput,
  assertCallInput,
  assertSaveOptions,
  followRunOptionsSchema,
  journalReadOptionsSchema,
  listOptionsSchema,
  loadOptionsSchema,
} from './options/option-schemas.js';
import { type ResolvedOptions, resolveOptions } from './options/options.js';
import type { SessionStoreOptions } from './options/store-options.js';
import { type FollowRunHost, followRun } from './runs/follow/follow-run.js';
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
import { StoreRuns, type StoreRunsHost } from './runs/store-runs.js';
import { listSessions } from './sessions/listing/session-index.js';
import { LiveSessions } from './sessions/live-sessions.js';
import { type CacheEntry, SessionCache } from './sessions/session-cache.js';
import {
  createSession,
  rotateSession,
  type SessionCreationHost,
} from './sessions/session-creation.js';
import { SessionPersistence } from './sessions/session-persistence.js';
import type {
  CreateSessionInput,
  ListOptions,
  LoadOptions,
  SaveOptions,
  SessionPage,
} from './sessions/session-types.js';
import { StoreSessions, type StoreSessionsHost } from './sessions/store-sessions.js';
import { flushCachedSessions } from './shutdown/flush-sessions.js';
import type {
  CloseReport,
  FlushReport,
  SessionStore,
  StoreDiagnostics,
  StoreEvent,
} from './store-types.js';
import type { Clock } from './time/clock.js';
import { assertValidId } from './validation/ids.js';
import type { Session } from './validation/schemas.js';
import { assertCreateInput } from './validation/session-validation.js';

/** Creates a session store over an adapter. See SessionStoreOptions for every option. */
export function createSessionStore(options: SessionStoreOptions): SessionStore {
  const resolved = resolveOptions(options);
  // Read-only: the store writes as always, into memory (see readOnlyOverlay).
  if (resolved.readOnly) resolved.adapter = readOnlyOverlay(resolved.adapter);
  return new KeepsakeStore(resolved);
}

type StoreState = 'open' | 'closing' | 'closed';

/**
 * Wires the parts of a store together and keeps what they all share: the backend's single
 * open() (`ready`), the open, closing and closed states, shutdown, and event listeners.
 * Session calls go to StoreSessions and session-creation.ts, run calls to StoreRuns.
 */
class KeepsakeStore implements SessionStore, StoreSessionsHost, StoreRunsHost, SessionCreationHost {
  readonly adapter: StorageAdapter;
  readonly clock: Clock;
  readonly lifecycle: Lifecycle;
  readonly locks = new LockRegistry();
  readonly persistence: SessionPersistence;
  readonly cache: SessionCache;
  readonly liveSessions: LiveSessions;
  readonly runs: StoreRuns;
  /** B4: ids whose create() failed after it was sent: it may have landed (see create-retry). */
  readonly unconfirmedCreates = new Set<string>();
  private readonly sessions: StoreSessions;
  /** Not private because the parts read it; only close() writes it. */
  state: StoreState = 'open';
  private openPromise: Promise<void> | null = null;
  /** Set once the adapter opened (see `isReady`). */
  private opened = false;
  private readonly listeners = new Set<(event: StoreEvent) => void>();
  private closePromise: Promise<CloseReport> | null = null;

  /** What followRun needs (H4): reads, fresh loads that repair (F1), and the wake-ups. */
  private readonly followHost: FollowRunHost;

  constructor(readonly options: ResolvedOptions) {
    this.adapter = options.adapter;
    this.clock = options.clock;
    this.persistence = new SessionPersistence({
      adapter: options.adapter,
      clock: options.clock,
      limits: options.limits,
      compactAfter: options.compactAfter,
      compactRatio: options.compactRatio,
      emit: (event) => this.emit(event),
    });
    this.cache = new SessionCache(options.maxCachedSessions, (entry) => this.isPinned(entry));
    this.liveSessions = new LiveSessions(this.cache, this.persistence);
    this.lifecycle = new Lifecycle({
      adapter: options.adapter,
      clock: options.clock,
      drainDeadlineMs: options.drainDeadlineMs,
      detached: (fn) => this.locks.detached(fn),
      isClosing: () => this.state !== 'open',
      onQuarantine: (sessionId, location) => this.emit({ type: 'quarantine', sessionId, location }),
      onCommitError: (sessionId, error) =>
        this.emit({
          type: 'warning',
          sessionId,
          field: 'lifecycle',
          message: `memory commit failed: ${error instanceof Error ? error.message : String(error)}`,
        }),
    });
    this.runs = new StoreRuns(this);
    this.sessions = new StoreSessions(this);
    this.followHost = followHostOf(this, this.runs);
    if (options.readOnly) {
      // What the application asks the memory lifecycle to write is refused too.
      this.lifecycle.markTurnCompleted = () => this.refuse('mark a turn completed');
      this.lifecycle.commit = () => this.refuse('commit memory');
    }
  }

  /** A write call of a read-only store: refused, never a silent no-op. */
  private refuse(operation: string): Promise<never> {
    return Promise.reject(new ReadOnlyError('This session store', operation));
  }

  get closed(): boolean {
    return this.state !== 'open';
  }

  // ── Sessions ─────────────────────────────────────────────────────────────────────

  async create(input: CreateSessionInput = {}, options: SaveOptions = {}): Promise<Session> {
    if (this.options.readOnly) return this.refuse('create a session');
    assertSaveOptions(options, 'create()');
    if (typeof input === 'object' && input !== null && input.id !== undefined) {
      assertValidId(input.id);
    }
    assertCreateInput(input);
    return createSession(this, input, options);
  }

  async load(id: string, options?: LoadOptions): Promise<Session> {
    assertCallInput(loadOptionsSchema, options, 'load()');
    return this.sessions.load(id, options);
  }

  reload(id: string): Promise<Session> {
    return this.sessions.reload(id);
  }

  diagnostics(): StoreDiagnostics {
    return {
      cachedSessions: this.cache.size,
      lockEntries: this.locks.size,
      liveRuns: this.runs.size,
      state: this.state,
    };
  }

  exists(id: string): Promise<boolean> {
    return this.sessions.exists(id);
  }

  save(session: Session, options?: SaveOptions): Promise<Session> {
    if (this.options.readOnly) return this.refuse('save a session');
    // Not async: the save's own promise is returned as it is, one layer fewer on every save.
    try {
      assertSaveOptions(options, 'save()');
    } catch (error) {
      return Promise.reject(error);
    }
    return this.sessions.save(session, options);
  }

  delete(id: string): Promise<boolean> {
    if (this.options.readOnly) return this.refuse('delete a session');
    return this.sessions.delete(id);
  }

  async list(options: ListOptions = {}): Promise<SessionPage> {
    assertCallInput(listOptionsSchema, options, 'list()');
    await this.ready('list sessions');
    await this.persistence.indexRepairs.catchUp((id, fn) => this.locks.withLockIfNotHeld(id, fn));
    return listSessions(this.adapter, this.clock, options);
  }

  rename(oldId: string, newId: string): Promise<Session> {
    if (this.options.readOnly) return this.refuse('rename a session');
    return rotateSession(this, oldId, newId);
  }

  async withLock<T>(id: string, fn: () => Promise<T>): Promise<T> {
    assertValidId(id);
    if (typeof fn !== 'function') throw new InvalidInputError('withLock() takes a function');
    if (this.state === 'closed') throw new StoreClosedError('lock a session');
    // D1/D2: the place in the lock's queue is taken at the call, before any await, so the
    // order of calls is the order of holders (a rename called first is served first).
    return this.locks.withLock(id, async () => {
      await this.ready('lock a session');
      return fn();
    });
  }

  retainedRevisions(id: string): Promise<number[]> {
    return this.sessions.retainedRevisions(id);
  }

  loadRetainedRevision(id: string, revision: number): Promise<Session> {
    return this.sessions.loadRetainedRevision(id, revision);
  }

  // ── Runs ─────────────────────────────────────────────────────────────────────────

  async beginRun(sessionId: string, input: BeginRunInput): Promise<RunHandle> {
    if (this.options.readOnly) return this.refuse('begin a run');
    assertBeginRunInput(input);
    return this.runs.beginRun(sessionId, input);
  }

  activeRun(sessionId: string): RunHandle | null {
    return this.runs.activeRun(sessionId);
  }

  cancelRun(sessionId: string, runId?: string): Promise<CancelOutcome> {
    if (this.options.readOnly) return this.refuse('cancel a run');
    return this.runs.cancelRun(sessionId, runId);
  }

  async readJournal(
    sessionId: string,
    runId: string,
    options?: JournalReadOptions,
  ): Promise<JournalReadResult> {
    assertCallInput(journalReadOptionsSchema, options, 'readJournal()');
    return this.runs.readJournal(sessionId, runId, options);
  }

  runSummary(sessionId: string, runId: string): Promise<RunSummary> {
    return this.runs.runSummary(sessionId, runId);
  }

  findRun(runId: string): Promise<RunSummary | null> {
    return this.runs.findRun(runId);
  }

  closeAnsweredRun(sessionId: string, runId: string): Promise<RunTerminalState | null> {
    if (this.options.readOnly) return this.refuse('close an answered run');
    return this.runs.closeAnsweredRun(sessionId, runId);
  }

  listRuns(sessionId: string): Promise<string[]> {
    return this.runs.listRuns(sessionId);
  }

  followRun(
    sessionId: string,
    runId: string,
    options: FollowRunOptions = {},
  ): AsyncGenerator<FollowRunItem> {
    assertValidId(sessionId);
    assertValidId(runId, 'run');
    assertCallInput(followRunOptionsSchema, options, 'followRun()');
    if (this.state === 'closed') throw new StoreClosedError('follow a run');
    return followRun(this.followHost, sessionId, runId, {
      after: options.after ?? 0,
      signal: options.signal,
      pollIntervalMs: options.pollIntervalMs ?? this.options.followPollMs,
      pushedPollIntervalMs: options.pollIntervalMs ?? this.options.followPushedPollMs,
    });
  }

  // ── Shutdown ─────────────────────────────────────────────────────────────────────

  async flushAll(): Promise<FlushReport> {
    if (this.state === 'closed') throw new StoreClosedError('flush sessions');
    await this.ready('flush sessions');
    return this.flushEverything();
  }

  close(): Promise<CloseReport> {
    this.closePromise ??= this.closeOnce();
    return this.closePromise;
  }

  /**
   * C2: always ends closed with the adapter closed, whatever failed on the way; a failure
   * to flush one session is reported in the flush report, never thrown for all of them.
   */
  private async closeOnce(): Promise<CloseReport> {
    this.state = 'closing';
    try {
      await Promise.allSettled(this.runs.all().map((run) => run.stopCheckpoint()));
      const lifecycle = await this.lifecycle.drain();
      const flush = await this.flushEverything();
      return { flush, lifecycle };
    } finally {
      this.state = 'closed';
      this.runs.followers.wakeAll();
      await this.adapter.close().catch(() => undefined);
    }
  }

  private flushEverything(): Promise<FlushReport> {
    // C4: an evicted session the application still holds is flushed too when it has
    // anything unsaved or not yet durable; one that is stored durably costs nothing.
    const released = this.cache
      .released()
      .filter((entry) => !entry.durable || this.persistence.isDirty(entry));
    return flushCachedSessions({
      entries: [...this.cache.values(), ...released],
      persistence: this.persistence,
      locks: this.locks,
      adapter: this.adapter,
      concurrency: this.options.flushConcurrency,
    });
  }

  on(listener: (event: StoreEvent) => void): () => void {
    if (typeof listener !== 'function') throw new InvalidInputError('on() takes a function');
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async quarantined() {
    await this.ready('list quarantined documents');
    return adapterCall(this.adapter.name, 'list quarantined documents', () =>
      this.adapter.listQuarantined(),
    );
  }

  // ── Internals ────────────────────────────────────────────────────────────────────

  emit(event: StoreEvent): void {
    // H4: an ending or a repair of a run wakes its followers here (appends wake them in hand).
    if (event.type === 'run') this.runs.followers.changed(event.runId);
    else if (event.type === 'recovery' && event.runId !== null) {
      this.runs.followers.changed(event.runId);
    }
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch {
        // A listener's failure must never fail a save or a run.
      }
    }
  }

  /** Whether the adapter has opened (and the store is not closed): `ready()` would resolve at once. */
  get isReady(): boolean {
    return this.opened && this.state !== 'closed';
  }

  async ready(operation: string): Promise<void> {
    if (this.state === 'closed') throw new StoreClosedError(operation);
    // A retryable failure (a backend briefly unreachable at startup) is not kept: the next
    // call opens again, instead of the store staying unusable for good.
    this.openPromise ??= adapterCall(this.adapter.name, 'open', () => this.adapter.open()).catch(
      (error: unknown) => {
        if (KeepsakeError.isInstance(error) && error.isRetryable) this.openPromise = null;
        throw error;
      },
    );
    await this.openPromise;
    this.opened = true;
  }

  private isPinned(entry: CacheEntry): boolean {
    const id = entry.session.id;
    return (
      this.runs.has(id) ||
      this.locks.isBusy(id) ||
      this.liveSessions.isLoading(id) ||
      this.sessions.isRecovering(id) ||
      this.persistence.isDirty(entry)
    );
  }
}

function followHostOf(store: KeepsakeStore, runs: StoreRuns): FollowRunHost {
  return {
    clock: store.clock,
    graceMs: store.options.graceMs,
    followers: runs.followers,
    get closed() {
      return store.closed;
    },
    readJournal: (sessionId, runId, options) => runs.readJournal(sessionId, runId, options),
    runSummary: (sessionId, runId) => runs.runSummary(sessionId, runId),
    // refresh: another instance may have ended, repaired or continued the run since.
    loadFresh: (sessionId) => store.load(sessionId, { refresh: true }),
    closeAnsweredRun: (sessionId, runId) => runs.closeAnsweredRun(sessionId, runId),
    isLiveHere: (runId) => runs.isLiveHere(runId),
    knowsOwners: store.adapter.liveness !== undefined,
    ownerState: (ownerId) =>
      store.adapter.liveness?.ownerState(ownerId) ?? Promise.resolve('unknown'),
    watchLog: (sessionId, runId, onAppend) => {
      const { adapter } = store;
      if (adapter.watchLog === undefined) return null;
      try {
        return adapter.watchLog(sessionId, runId, onAppend);
      } catch (error) {
        // A push that cannot be set up (an adapter's bug, a limit reached such as inotify's
        // max_user_watches) leaves the follower to its poll, which is slower: say so.
        store.emit({
          type: 'warning',
          sessionId,
          field: 'followRun',
          message: `run ${runId}: the backend's push could not be set up (${error instanceof Error ? error.message : String(error)}); following it by polling every runs.followPollMs`,
        });
        return null;
      }
    },
  };
}
