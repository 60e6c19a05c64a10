import type { StorageAdapter } from './adapter.js';
import { adapterCall } from './adapter-call.js';
import type { Clock } from './clock.js';
import { findReservedField, headOf } from './document-codec.js';
import {
  AlreadyExistsError,
  InvalidInputError,
  NotFoundError,
  ReservedFieldError,
  RevisionConflictError,
  SessionBusyError,
  StoreClosedError,
  SummaryOnlyError,
} from './errors.js';
import { flushCachedSessions } from './flush-sessions.js';
import { assertValidId, randomId } from './ids.js';
import { readJournal, readWholeJournal, terminalStateOf } from './journal.js';
import { foldLateOutput } from './late-output.js';
import { Lifecycle } from './lifecycle.js';
import { LockRegistry } from './lock-registry.js';
import { type ResolvedOptions, resolveOptions } from './options.js';
import {
  needsRecovery,
  type RecoveryContext,
  repairPendingTurn,
  retryPendingMarkers,
} from './recovery.js';
import {
  createJournalWriter,
  interruptPendingTurn,
  type RefreshOutcome,
  Run,
  type RunHost,
} from './run.js';
import type { Session } from './schemas.js';
import { type CacheEntry, SessionCache } from './session-cache.js';
import { listSessions } from './session-index.js';
import { normalizeMessage, SessionPersistence } from './session-persistence.js';
import type {
  BeginRunInput,
  CancelOutcome,
  CloseReport,
  CreateSessionInput,
  FlushReport,
  JournalReadOptions,
  JournalReadResult,
  ListOptions,
  LoadOptions,
  RunHandle,
  RunSummary,
  SaveOptions,
  SessionPage,
  SessionStore,
  SessionStoreOptions,
  StoreDiagnostics,
  StoreEvent,
} from './store-types.js';
import {
  listRetainedRevisionIds,
  removeStoredSession,
  retainedRevisionOf,
} from './stored-session-removal.js';

/** Creates a session store over an adapter. See SessionStoreOptions for every option. */
export function createSessionStore(options: SessionStoreOptions): SessionStore {
  return new KeepsakeStore(resolveOptions(options));
}

type StoreState = 'open' | 'closing' | 'closed';

class KeepsakeStore implements SessionStore, RunHost {
  readonly adapter: StorageAdapter;
  readonly clock: Clock;
  readonly lifecycle: Lifecycle;
  readonly locks = new LockRegistry();
  private state: StoreState = 'open';
  private openPromise: Promise<void> | null = null;
  private readonly persistence: SessionPersistence;
  private readonly cache: SessionCache;
  private readonly runs = new Map<string, Run>();
  private readonly summaryViews = new WeakSet<Session>();
  private readonly detachedCopies = new WeakSet<Session>();
  private readonly loadsInFlight = new Map<string, Promise<CacheEntry>>();
  private readonly recoveriesInFlight = new Set<string>();
  private readonly listeners = new Set<(event: StoreEvent) => void>();
  private closePromise: Promise<CloseReport> | null = null;

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
  }

  get closed(): boolean {
    return this.state !== 'open';
  }

  // ── Sessions ─────────────────────────────────────────────────────────────────────

  async create(input: CreateSessionInput = {}, options: SaveOptions = {}): Promise<Session> {
    if (typeof input !== 'object' || input === null) {
      throw new InvalidInputError('create() takes an object');
    }
    const id = input.id === undefined ? randomId() : assertValidId(input.id);
    await this.ready('create a session');
    const reserved = findReservedField(input);
    if (reserved !== null) throw new ReservedFieldError(reserved, `session "${id}"`);
    const { messages: inputMessages, ...fields } = input;
    if (inputMessages !== undefined && !Array.isArray(inputMessages)) {
      throw new InvalidInputError('create(): `messages` must be an array');
    }
    return this.locks.withLockIfNotHeld(id, async () => {
      if (this.cache.peek(id) !== undefined) throw new AlreadyExistsError(id);
      const now = this.clock.now();
      const session = {
        ...fields,
        id,
        title: input.title ?? '',
        createdAt: now,
        updatedAt: now,
        revision: 0,
        messages: (inputMessages ?? []).map((message, index) =>
          normalizeMessage(message, now, `create() messages[${index}]`),
        ),
        pending: null,
        toolCalls: [],
        parentId:
          input.parentId === undefined || input.parentId === null
            ? null
            : assertValidId(input.parentId),
        rotatedTo: null,
        metadata: input.metadata ?? {},
      } as Session;
      const entry = newEntry(session);
      try {
        await this.persistence.write(entry, options);
      } catch (error) {
        if (RevisionConflictError.isInstance(error)) throw new AlreadyExistsError(id);
        throw error;
      }
      this.cache.set(id, entry);
      return session;
    });
  }

  async load(id: string, options: LoadOptions = {}): Promise<Session> {
    assertValidId(id);
    await this.ready('load a session');
    if (options.summaryOnly === true) return this.loadSummaryView(id);
    const entry = await this.entryFor(id);
    if (options.refresh === true) {
      await this.locks.withLockIfNotHeld(id, () => this.refreshIfClean(entry));
    }
    await this.recoverIfNeeded(entry);
    return entry.session;
  }

  async reload(id: string): Promise<Session> {
    assertValidId(id);
    await this.ready('reload a session');
    if (this.runs.has(id)) throw new SessionBusyError(id, this.runs.get(id)!.runId);
    return this.locks.withLockIfNotHeld(id, async () => {
      const cached = this.cache.peek(id);
      if (cached === undefined) return (await this.entryFor(id)).session;
      if ((await this.replaceFromStorage(cached)) === 'deleted') {
        this.cache.delete(id);
        throw new NotFoundError(id);
      }
      return cached.session;
    });
  }

  diagnostics(): StoreDiagnostics {
    return {
      cachedSessions: this.cache.size,
      lockEntries: this.locks.size,
      liveRuns: this.runs.size,
      state: this.state,
    };
  }

  async exists(id: string): Promise<boolean> {
    assertValidId(id);
    await this.ready('check a session');
    if (this.cache.peek(id) !== undefined) return true;
    const stored = await adapterCall(this.adapter.name, 'read a session', () =>
      this.adapter.getDocument('sessions', id),
    );
    return stored !== null;
  }

  async save(session: Session, options: SaveOptions = {}): Promise<Session> {
    if (this.state === 'closed') throw new StoreClosedError('save a session');
    if (typeof session !== 'object' || session === null) {
      throw new InvalidInputError('save() takes a session object');
    }
    if (this.summaryViews.has(session)) throw new SummaryOnlyError(session.id);
    if (this.detachedCopies.has(session)) {
      throw new InvalidInputError(
        `This copy of session "${session.id}" is a retained revision; copy what you need into the live session and save that`,
      );
    }
    const id = assertValidId(session.id);
    await this.ready('save a session');
    return this.locks.withLockIfNotHeld(id, async () => {
      const entry = await this.adoptForSave(session);
      const saved = await this.persistence.write(entry, options);
      this.cache.set(id, entry);
      return saved;
    });
  }

  async delete(id: string): Promise<boolean> {
    assertValidId(id);
    await this.ready('delete a session');
    return this.locks.withLockIfNotHeld(id, async () => {
      await this.runs.get(id)?.abandon();
      const cached = this.cache.peek(id) !== undefined;
      const existed = await removeStoredSession(this.adapter, id);
      this.cache.delete(id);
      this.lifecycle.forget(id);
      return existed || cached;
    });
  }

  async list(options: ListOptions = {}): Promise<SessionPage> {
    await this.ready('list sessions');
    return listSessions(this.adapter, this.clock, options);
  }

  async rename(oldId: string, newId: string): Promise<Session> {
    assertValidId(oldId);
    assertValidId(newId);
    await this.ready('rename a session');
    if (oldId === newId) throw new InvalidInputError('rename(): the new id equals the old one');
    return this.locks.withLockIfNotHeld(oldId, async () => {
      // D2: the new id names the very mutex held under the old one.
      this.locks.alias(newId, oldId);
      const parentEntry = await this.entryFor(oldId);
      const parent = parentEntry.session;
      if (parent.rotatedTo !== null) {
        throw new InvalidInputError(
          `Session "${oldId}" was already rotated to "${parent.rotatedTo}"`,
        );
      }
      const now = this.clock.now();
      const child = {
        ...parent,
        id: newId,
        messages: [...parent.messages],
        toolCalls: [...parent.toolCalls],
        metadata: { ...parent.metadata },
        parentId: oldId,
        rotatedTo: null,
        revision: 0,
        createdAt: now,
        updatedAt: now,
      } as Session;
      const childEntry = newEntry(child);
      try {
        await this.persistence.write(childEntry, { fsync: true });
      } catch (error) {
        if (RevisionConflictError.isInstance(error)) throw new AlreadyExistsError(newId);
        throw error;
      }
      this.cache.set(newId, childEntry);
      // A live run follows the rotation (context compression rotates ids mid-run).
      const live = this.runs.get(oldId);
      if (live !== undefined) {
        await live.moveTo(newId);
        this.runs.delete(oldId);
        this.runs.set(newId, live);
      }
      // The parent is kept, never destroyed; it is marked so list() hides it by default.
      const parentPending = parent.pending;
      parent.rotatedTo = newId;
      parent.pending = null;
      try {
        await this.persistence.write(parentEntry, { fsync: true, touchUpdatedAt: false });
      } catch (error) {
        parent.rotatedTo = null;
        parent.pending = parentPending;
        throw error;
      }
      return child;
    });
  }

  async withLock<T>(id: string, fn: () => Promise<T>): Promise<T> {
    assertValidId(id);
    await this.ready('lock a session');
    return this.locks.withLock(id, fn);
  }

  async retainedRevisions(id: string): Promise<number[]> {
    assertValidId(id);
    await this.ready('list retained revisions');
    const revisions = (await listRetainedRevisionIds(this.adapter, id))
      .map((retainedId) => retainedRevisionOf(id, retainedId))
      .filter((revision) => revision !== null);
    return revisions.sort((left, right) => left - right);
  }

  async loadRetainedRevision(id: string, revision: number): Promise<Session> {
    assertValidId(id);
    if (!Number.isInteger(revision) || revision < 1) {
      throw new InvalidInputError('loadRetainedRevision(): revision must be a positive integer');
    }
    await this.ready('load a retained revision');
    const entry = await this.persistence.readRetained(`${id}.${revision}`, id);
    this.detachedCopies.add(entry.session);
    return entry.session;
  }

  // ── Runs ─────────────────────────────────────────────────────────────────────────

  async beginRun(sessionId: string, input: BeginRunInput): Promise<RunHandle> {
    if (this.state !== 'open') throw new StoreClosedError('start a run');
    assertValidId(sessionId);
    if (typeof input !== 'object' || input === null) {
      throw new InvalidInputError('beginRun() needs { userMessage }');
    }
    const runId = input.runId === undefined ? randomId() : assertValidId(input.runId, 'run');
    const now = this.clock.now();
    const userMessage = normalizeMessage(input.userMessage, now, 'beginRun() userMessage');
    if (input.attachments !== undefined && !Array.isArray(input.attachments)) {
      throw new InvalidInputError('beginRun(): `attachments` must be an array');
    }
    await this.ready('start a run');
    // Recovery of a dead pending turn runs here, before the lock is taken.
    await this.load(sessionId);
    return this.locks.withLock(sessionId, async () => {
      if (this.state !== 'open') throw new StoreClosedError('start a run');
      const live = this.runs.get(sessionId);
      if (live !== undefined) throw new SessionBusyError(sessionId, live.runId);
      const entry = await this.entryFor(sessionId);
      const session = entry.session;
      // Another instance may have finished or cancelled that turn since we cached it.
      if (session.pending !== null && (await this.refreshIfClean(entry)) === 'deleted') {
        this.cache.delete(sessionId);
        throw new NotFoundError(sessionId);
      }
      if (session.pending !== null) {
        const outcome = await repairPendingTurn(session, this.recoveryContext());
        if (outcome === 'alive') throw new SessionBusyError(sessionId, session.pending.streamId);
      }
      const previousPending = session.pending;
      session.pending = {
        streamId: runId,
        userMessage,
        attachments: input.attachments ?? [],
        startedAt: now,
        heartbeatAt: now,
      };
      try {
        // E1: the user's turn is durable before the agent starts.
        await this.persistence.write(entry, { fsync: true });
      } catch (error) {
        session.pending = previousPending;
        throw error;
      }
      const run = new Run(this, sessionId, runId);
      this.runs.set(sessionId, run);
      run.start();
      this.emit({ type: 'run', sessionId, runId, state: 'started' });
      return run;
    });
  }

  activeRun(sessionId: string): RunHandle | null {
    return this.runs.get(sessionId) ?? null;
  }

  async cancelRun(sessionId: string, runId?: string): Promise<CancelOutcome> {
    assertValidId(sessionId);
    if (runId !== undefined) assertValidId(runId, 'run');
    await this.ready('cancel a run');
    const local = this.runs.get(sessionId);
    if (local !== undefined && (runId === undefined || local.runId === runId))
      return local.cancel();
    return this.locks.withLock(sessionId, async () => {
      const entry = await this.entryFor(sessionId);
      await this.refreshIfClean(entry);
      const pending = entry.session.pending;
      if (pending === null) return { cancelled: false, reason: 'no-pending-turn' };
      if (runId !== undefined && pending.streamId !== runId)
        return { cancelled: false, reason: 'not-active' };
      const writer = createJournalWriter(this, sessionId, pending.streamId);
      return interruptPendingTurn(this, entry, writer, 'cancel');
    });
  }

  async readJournal(
    sessionId: string,
    runId: string,
    options: JournalReadOptions = {},
  ): Promise<JournalReadResult> {
    assertValidId(sessionId);
    assertValidId(runId, 'run');
    for (const name of ['afterSequence', 'upToSequence', 'limit'] as const) {
      const value = options[name];
      if (value !== undefined && (!Number.isInteger(value) || value < 0)) {
        throw new InvalidInputError(`readJournal(): \`${name}\` must be a non-negative integer`);
      }
    }
    await this.ready('read a journal');
    return readJournal(this.adapter, sessionId, runId, options);
  }

  async runSummary(sessionId: string, runId: string): Promise<RunSummary> {
    assertValidId(sessionId);
    assertValidId(runId, 'run');
    await this.ready('read a journal');
    const journal = await readWholeJournal(this.adapter, sessionId, runId);
    return {
      sessionId,
      runId,
      exists: journal.exists,
      lastSequence: journal.records.at(-1)?.sequence ?? 0,
      terminalState: terminalStateOf(journal.records),
    };
  }

  async listRuns(sessionId: string): Promise<string[]> {
    assertValidId(sessionId);
    await this.ready('list runs');
    return adapterCall(this.adapter.name, 'list journals', () => this.adapter.listLogs(sessionId));
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

  private async closeOnce(): Promise<CloseReport> {
    this.state = 'closing';
    await Promise.all([...this.runs.values()].map((run) => run.stopCheckpoint()));
    const lifecycle = await this.lifecycle.drain();
    const flush = await this.flushEverything();
    this.state = 'closed';
    await this.adapter.close().catch(() => undefined);
    return { flush, lifecycle };
  }

  private flushEverything(): Promise<FlushReport> {
    return flushCachedSessions({
      entries: this.cache.values(),
      persistence: this.persistence,
      locks: this.locks,
      adapter: this.adapter,
      concurrency: this.options.flushConcurrency,
    });
  }

  on(listener: (event: StoreEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async quarantined() {
    await this.ready('list quarantined documents');
    return adapterCall(this.adapter.name, 'list quarantined documents', () =>
      this.adapter.listQuarantined(),
    );
  }

  // ── RunHost and internals ────────────────────────────────────────────────────────

  emit(event: StoreEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch {
        // A listener's failure must never fail a save or a run.
      }
    }
  }

  async write(entry: CacheEntry, options: SaveOptions): Promise<Session> {
    const saved = await this.persistence.write(entry, options);
    this.cache.set(entry.session.id, entry);
    return saved;
  }

  runEnded(run: Run): void {
    if (this.runs.get(run.sessionId) === run) this.runs.delete(run.sessionId);
  }

  async markTurnCompleted(sessionId: string): Promise<void> {
    await this.lifecycle.markTurnCompleted(sessionId).catch((error: unknown) =>
      this.emit({
        type: 'warning',
        sessionId,
        field: 'lifecycle',
        message: `could not record the completed turn: ${error instanceof Error ? error.message : String(error)}`,
      }),
    );
  }

  foldLateOutput(entry: CacheEntry, runId: string): Promise<void> {
    return foldLateOutput(this, entry, runId, this.recoveryContext());
  }

  /** The live cache entry of a session, read from storage once (single flight, C4). */
  async entryFor(id: string): Promise<CacheEntry> {
    const cached = this.cache.touch(id);
    if (cached !== undefined) return cached;
    let loading = this.loadsInFlight.get(id);
    if (loading === undefined) {
      loading = this.persistence.read(id).then((entry) => {
        const raced = this.cache.peek(id);
        if (raced !== undefined) return raced;
        this.cache.set(id, entry);
        return entry;
      });
      loading = loading.finally(() => this.loadsInFlight.delete(id));
      this.loadsInFlight.set(id, loading);
    }
    return loading;
  }

  recoveryContext(): RecoveryContext {
    return {
      adapter: this.adapter,
      now: this.clock.now(),
      graceMs: this.options.graceMs,
      maxAttempts: this.options.maxAttempts,
      giveUpMs: this.options.giveUpMs,
      appendCrashRecord: async (sessionId, runId) => {
        await createJournalWriter(this, sessionId, runId).append({
          type: 'interrupted',
          data: { reason: 'crash' },
        });
      },
    };
  }

  private async recoverIfNeeded(entry: CacheEntry): Promise<void> {
    const session = entry.session;
    const liveRunIds = new Set([...this.runs.values()].map((run) => run.runId));
    if (!needsRecovery(session, liveRunIds)) return;
    const id = session.id;
    // F3: the caller holds this session's lock, so a later load repairs it.
    if (this.locks.holds(id)) return;
    // F3: single flight; the others return without waiting for it.
    if (this.recoveriesInFlight.has(id)) return;
    this.recoveriesInFlight.add(id);
    try {
      await this.locks.withLock(id, async () => {
        const current = this.cache.peek(id) ?? entry;
        let changed = false;
        const pending = current.session.pending;
        if (pending !== null && !this.runs.has(id)) {
          const outcome = await repairPendingTurn(current.session, this.recoveryContext());
          if (outcome !== 'alive') {
            changed = true;
            this.emit({ type: 'recovery', sessionId: id, runId: pending.streamId, outcome });
          }
        }
        if (await retryPendingMarkers(current.session, this.recoveryContext())) changed = true;
        // A marker removed because its journal completed is the only shrink recovery makes.
        if (changed) {
          await this.write(current, { fsync: true, touchUpdatedAt: false, allowShrink: true });
        }
      });
    } catch (error) {
      if (!RevisionConflictError.isInstance(error)) throw error;
      // Another instance changed the session first; it will be repaired on a later load.
      this.emit({ type: 'conflict', sessionId: id });
    } finally {
      this.recoveriesInFlight.delete(id);
    }
  }

  private async loadSummaryView(id: string): Promise<Session> {
    const entry = this.cache.peek(id) ?? (await this.persistence.read(id));
    const view = { ...headOf(entry.session), messages: [] } as unknown as Session;
    this.summaryViews.add(view);
    return view;
  }

  /** Picks the cache entry a caller's session object belongs to (B4). */
  private async adoptForSave(session: Session): Promise<CacheEntry> {
    const id = session.id;
    let entry = this.cache.peek(id);
    if (entry === undefined) {
      entry = (await this.persistence.readOrNull(id)) ?? undefined;
      if (entry === undefined) {
        throw new InvalidInputError(
          `Session "${id}" does not exist; create it with store.create()`,
        );
      }
    }
    if (entry.session !== session) {
      if (session.revision !== entry.storedRevision) {
        throw new RevisionConflictError(id, session.revision, entry.storedRevision);
      }
      entry.session = session;
    }
    return entry;
  }

  /** Re-reads a session another instance may have changed, unless this one has unsaved edits. */
  async refreshIfClean(entry: CacheEntry): Promise<RefreshOutcome> {
    if (this.persistence.isDirty(entry)) return 'dirty';
    return this.replaceFromStorage(entry);
  }

  forgetDeleted(sessionId: string): void {
    this.cache.delete(sessionId);
  }

  /** Updates the live instance in place from what is stored now. */
  private async replaceFromStorage(entry: CacheEntry): Promise<RefreshOutcome> {
    const fresh = await this.persistence.readOrNull(entry.session.id);
    if (fresh === null) return 'deleted';
    if (fresh.storedRevision === entry.storedRevision && !this.persistence.isDirty(entry)) {
      return 'unchanged';
    }
    const live = entry.session as Record<string, unknown>;
    for (const key of Object.keys(live)) delete live[key];
    Object.assign(live, fresh.session);
    entry.storedRevision = fresh.storedRevision;
    entry.storedMessages = fresh.storedMessages;
    entry.storedHeadText = fresh.storedHeadText;
    entry.deltasSinceFull = fresh.deltasSinceFull;
    entry.deltaBytesSinceFull = fresh.deltaBytesSinceFull;
    entry.storedBytes = fresh.storedBytes;
    entry.durable = true;
    entry.indexStale = false;
    return 'refreshed';
  }

  private isPinned(entry: CacheEntry): boolean {
    const id = entry.session.id;
    return (
      this.runs.has(id) ||
      this.locks.isBusy(id) ||
      this.loadsInFlight.has(id) ||
      this.recoveriesInFlight.has(id) ||
      this.persistence.isDirty(entry)
    );
  }

  private async ready(operation: string): Promise<void> {
    if (this.state === 'closed') throw new StoreClosedError(operation);
    this.openPromise ??= adapterCall(this.adapter.name, 'open', () => this.adapter.open());
    await this.openPromise;
  }
}

function newEntry(session: Session): CacheEntry {
  return {
    session,
    storedRevision: null,
    storedMessages: [],
    storedHeadText: null,
    deltasSinceFull: 0,
    deltaBytesSinceFull: 0,
    storedBytes: 0,
    durable: false,
    indexStale: true,
  };
}
