import { InvalidInputError, ReservedFieldError } from '../errors/input-errors.js';
import {
  AlreadyExistsError,
  NotFoundError,
  RevisionConflictError,
} from '../errors/storage-errors.js';
import type { LockRegistry } from '../locks/lock-registry.js';
import type { StoreRuns } from '../runs/store-runs.js';
import type { Clock } from '../time/clock.js';
import { assertValidId, randomId } from '../validation/ids.js';
import type { Session } from '../validation/schemas.js';
import { normalizeMessage } from '../validation/session-validation.js';
import { isSameCreation } from './create-retry.js';
import { findReservedField } from './documents/document-codec.js';
import type { LiveSessions } from './live-sessions.js';
import type { CacheEntry, SessionCache } from './session-cache.js';
import type { SessionPersistence } from './session-persistence.js';
import type { CreateSessionInput, SaveOptions } from './session-types.js';

/** What creating a session (create, or rename's new child) needs from its store. */
export interface SessionCreationHost {
  readonly clock: Clock;
  readonly locks: LockRegistry;
  readonly cache: SessionCache;
  readonly persistence: SessionPersistence;
  readonly liveSessions: LiveSessions;
  readonly runs: StoreRuns;
  /** B4: ids whose create failed after it was sent; only these may meet their own document. */
  readonly unconfirmedCreates: Set<string>;
  ready(operation: string): Promise<void>;
}

/** store.create(): a new session at revision 0, written only if its id is still free. */
export async function createSession(
  host: SessionCreationHost,
  input: CreateSessionInput,
  options: SaveOptions,
): Promise<Session> {
  if (typeof input !== 'object' || input === null) {
    throw new InvalidInputError('create() takes an object');
  }
  const id = input.id === undefined ? randomId() : assertValidId(input.id);
  await host.ready('create a session');
  const reserved = findReservedField(input);
  if (reserved !== null) throw new ReservedFieldError(reserved, `session "${id}"`);
  const { messages: inputMessages, ...fields } = input;
  if (inputMessages !== undefined && !Array.isArray(inputMessages)) {
    throw new InvalidInputError('create(): `messages` must be an array');
  }
  return host.locks.withLockIfNotHeld(id, async () => {
    if (host.cache.peek(id) !== undefined) throw new AlreadyExistsError(id);
    const now = host.clock.now();
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
      await host.persistence.write(entry, options);
    } catch (error) {
      if (!RevisionConflictError.isInstance(error)) {
        // It may have landed (WriteOutcomeUnknownError, a lost answer): a retry from this
        // store may meet its own document.
        host.unconfirmedCreates.add(id);
        throw error;
      }
      // B4: a retry of a create whose outcome was unknown finds its own document there; any
      // other create of an existing id (another store's, a second one) is refused.
      const retried = host.unconfirmedCreates.delete(id);
      const stored = retried ? await host.liveSessions.entryFor(id).catch(() => null) : null;
      if (stored !== null && isSameCreation(stored.session, session, input)) {
        return stored.session;
      }
      throw new AlreadyExistsError(id);
    }
    host.unconfirmedCreates.delete(id);
    host.cache.set(id, entry);
    return session;
  });
}

/**
 * store.rename() (D2): a child session under the new id continues the old one, which is
 * kept and marked rotated rather than destroyed.
 */
export async function rotateSession(
  host: SessionCreationHost,
  oldId: string,
  newId: string,
): Promise<Session> {
  assertValidId(oldId);
  assertValidId(newId);
  if (oldId === newId) throw new InvalidInputError('rename(): the new id equals the old one');
  // D1/D2: both ids are locked, in one step, at the call (before any await): a holder of
  // either finishes first, and whoever asks for either after this call waits for the rename.
  return host.locks.withLocks([oldId, newId], async () => {
    await host.ready('rename a session');
    // The new id then names the very mutex held under the old one, for good.
    host.locks.alias(newId, oldId);
    const parentEntry = await host.liveSessions.entryFor(oldId);
    const parent = parentEntry.session;
    if (parent.rotatedTo !== null) {
      throw new InvalidInputError(
        `Session "${oldId}" was already rotated to "${parent.rotatedTo}"`,
      );
    }
    const now = host.clock.now();
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
    let childEntry = newEntry(child);
    try {
      await host.persistence.write(childEntry, { fsync: true });
      host.cache.set(newId, childEntry);
    } catch (error) {
      if (!RevisionConflictError.isInstance(error)) throw error;
      // The new id is taken. By this parent's own rotation, cut short after the child was
      // written (the parent's write failed, or the process died): the retry finishes it.
      // By anything else: refused. Deleted meanwhile: nothing to adopt (refused too); any
      // other failure reading it is reported as itself.
      const existing = await host.liveSessions.entryFor(newId).catch((readError: unknown) => {
        if (NotFoundError.isInstance(readError)) return null;
        throw readError;
      });
      if (existing === null || existing.session.parentId !== oldId) {
        throw new AlreadyExistsError(newId);
      }
      childEntry = existing;
    }
    // A live run follows the rotation (context compression rotates ids mid-run).
    await host.runs.followRotation(oldId, newId);
    // The parent is kept, never destroyed; it is marked so list() hides it by default.
    const parentPending = parent.pending;
    parent.rotatedTo = newId;
    parent.pending = null;
    try {
      await host.persistence.write(parentEntry, { fsync: true, touchUpdatedAt: false });
    } catch (error) {
      parent.rotatedTo = null;
      parent.pending = parentPending;
      throw error;
    }
    return childEntry.session;
  });
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
