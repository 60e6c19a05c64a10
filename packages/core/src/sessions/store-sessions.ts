/**
 * Folder sessions/: sessions and their saves (B1–B8), the live instance and the bounded cache
 * (C4). This file is the session half of the store API; session-creation.ts creates sessions
 * (and a rename's child, D2), session-persistence.ts is the read and write path (B2–B7), with
 * unconfirmed-writes.ts (B2, B4), retained-revisions.ts and message-ids.ts (B5) and
 * stored-session-removal.ts (B8) beside it; live-sessions.ts and session-cache.ts keep the live
 * instances (C4). documents/ is the stored form of a session (A2, A4, A5), listing/ the index
 * behind list() (B7).
 */

import type { StorageAdapter } from '../adapter/adapter.js';
import { adapterCall } from '../adapter/adapter-call.js';
import { InvalidInputError } from '../errors/input-errors.js';
import { StoreClosedError } from '../errors/lifecycle-errors.js';
import { SessionBusyError } from '../errors/run-errors.js';
import { NotFoundError } from '../errors/storage-errors.js';
import type { Lifecycle } from '../lifecycle/lifecycle.js';
import { LoadRecovery, type LoadRecoveryHost } from '../recovery/load-recovery.js';
import type { StoreDiagnostics } from '../store-types.js';
import { assertValidId } from '../validation/ids.js';
import type { Session } from '../validation/schemas.js';
import { DetachedCopies } from './detached-copies.js';
import type { SessionPersistence } from './session-persistence.js';
import type { LoadOptions, SaveOptions } from './session-types.js';
import {
  listRetainedRevisionIds,
  removeStoredSession,
  retainedRevisionOf,
} from './stored-session-removal.js';

/** What reading, saving and deleting sessions needs from the rest of the store. */
export interface StoreSessionsHost extends LoadRecoveryHost {
  readonly adapter: StorageAdapter;
  readonly lifecycle: Lifecycle;
  readonly persistence: SessionPersistence;
  readonly state: StoreDiagnostics['state'];
  ready(operation: string): Promise<void>;
  /** Whether `ready()` would resolve at once (a save then skips awaiting it). */
  readonly isReady: boolean;
}

/**
 * The session half of the store API apart from creating sessions (session-creation.ts):
 * loads (with their recovery, F1–F3), reloads, saves (B4), deletes (B8) and retained
 * revisions (B5). Each validates its input before it waits for the backend to open, so
 * bad input is reported as such even while the backend is unreachable.
 */
export class StoreSessions {
  private readonly recovery: LoadRecovery;
  private readonly copies: DetachedCopies;

  constructor(private readonly store: StoreSessionsHost) {
    this.recovery = new LoadRecovery(store);
    this.copies = new DetachedCopies(store.cache, store.persistence);
  }

  /** Whether a load's repair is in flight; the cache must not evict the session it writes. */
  isRecovering(id: string): boolean {
    return this.recovery.isRecovering(id);
  }

  async load(id: string, options: LoadOptions = {}): Promise<Session> {
    assertValidId(id);
    await this.store.ready('load a session');
    if (options.summaryOnly === true) return this.copies.loadSummaryView(id);
    const { locks, liveSessions } = this.store;
    const entry = await liveSessions.entryFor(id);
    if (options.refresh === true) {
      const outcome = await locks.withLockIfNotHeld(id, () =>
        liveSessions.refreshIfClean(entry, id),
      );
      // B8: another instance deleted it. The cached copy is a ghost: never repaired, never
      // returned (a follower of its run would end with a marker that no longer exists).
      if (outcome === 'deleted') {
        if (this.store.cache.peek(id) === entry) this.store.cache.delete(id);
        throw new NotFoundError(id);
      }
    }
    await this.recovery.recoverIfNeeded(entry);
    return entry.session;
  }

  async reload(id: string): Promise<Session> {
    assertValidId(id);
    const { locks, cache, liveSessions, runs } = this.store;
    await this.store.ready('reload a session');
    if (runs.has(id)) throw new SessionBusyError(id, runs.get(id)!.runId);
    return locks.withLockIfNotHeld(id, async () => {
      const cached = cache.peek(id);
      if (cached === undefined) return (await liveSessions.entryFor(id)).session;
      if ((await liveSessions.replaceFromStorage(cached, id)) === 'deleted') {
        cache.delete(id);
        throw new NotFoundError(id);
      }
      return cached.session;
    });
  }

  async exists(id: string): Promise<boolean> {
    assertValidId(id);
    const adapter = this.store.adapter;
    await this.store.ready('check a session');
    if (this.store.cache.peek(id) !== undefined) return true;
    return adapterCall(adapter.name, 'check a session', () => adapter.hasDocument('sessions', id));
  }

  async save(session: Session, options: SaveOptions = {}): Promise<Session> {
    if (this.store.state === 'closed') throw new StoreClosedError('save a session');
    if (typeof session !== 'object' || session === null) {
      throw new InvalidInputError('save() takes a session object');
    }
    this.copies.assertSavable(session);
    const id = assertValidId(session.id);
    const { locks, cache, persistence, liveSessions } = this.store;
    if (!this.store.isReady) await this.store.ready('save a session');
    // Unmarked: a save awaits no caller's code under the lock (see withLockUnmarked).
    return await locks.withLockUnmarked(id, async () => {
      // A cached session (the common save) is found without an await.
      const entry =
        liveSessions.cachedEntryForSave(session) ?? (await liveSessions.entryForSave(session));
      const saved = await persistence.write(entry, options, session);
      cache.set(id, entry);
      return saved;
    });
  }

  async delete(id: string): Promise<boolean> {
    assertValidId(id);
    const { locks, cache, runs, adapter, lifecycle } = this.store;
    await this.store.ready('delete a session');
    return locks.withLockIfNotHeld(id, async () => {
      await runs.get(id)?.abandon();
      const cached = cache.peek(id) !== undefined;
      const existed = await removeStoredSession(adapter, id);
      cache.delete(id);
      this.store.persistence.indexRepairs.forget(id);
      lifecycle.forget(id);
      return existed || cached;
    });
  }

  async retainedRevisions(id: string): Promise<number[]> {
    assertValidId(id);
    await this.store.ready('list retained revisions');
    const revisions = (await listRetainedRevisionIds(this.store.adapter, id))
      .map((retainedId) => retainedRevisionOf(id, retainedId))
      .filter((revision) => revision !== null);
    return revisions.sort((left, right) => left - right);
  }

  async loadRetainedRevision(id: string, revision: number): Promise<Session> {
    assertValidId(id);
    if (!Number.isInteger(revision) || revision < 1) {
      throw new InvalidInputError('loadRetainedRevision(): revision must be a positive integer');
    }
    await this.store.ready('load a retained revision');
    return this.copies.loadRetainedRevision(id, revision);
  }
}
