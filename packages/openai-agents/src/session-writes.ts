import {
  AlreadyExistsError,
  LockReentryError,
  type Message,
  NotFoundError,
  RevisionConflictError,
  type Session,
  type SessionStore,
} from '@keepsake/core';
import { type AgentSessionState, STATE_FIELD } from './session-state.js';

/** What one read-modify-write of a session changes; null fields are left as they are. */
export interface SessionChange<T> {
  result: T;
  /** The new transcript; undefined: unchanged. */
  messages?: Message[];
  state?: AgentSessionState;
  title?: string;
  /** B5: the change drops stored messages on purpose (popItem, clearSession). */
  allowShrink?: boolean;
}

export interface UpdateOptions {
  durable: boolean;
  /** Create the session when it is missing (with this title); otherwise a missing one is null. */
  createWithTitle?: string;
}

/** Bounded: a session that other instances rewrite this often in a row is contended, not unlucky. */
const ATTEMPTS = 8;

/**
 * One read-modify-write of a session (B4): under the session's lock in this process, on the
 * session as stored now (refreshed: another instance may have written it), then a conditional
 * save of a copy (it becomes the live session only once it landed). A revision conflict (another
 * instance wrote in between) reads again and applies `change` again, so two instances never
 * lose each other's writes. `change` must not have effects besides its return value.
 */
export async function updateSession<T>(
  store: SessionStore,
  id: string,
  options: UpdateOptions,
  change: (session: Session | null) => SessionChange<T>,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await store.withLock(id, async () => {
        // The first attempt may read this store's cached copy: if another instance wrote since,
        // the conditional save below is refused, and the next attempt reads what is stored.
        const session = await loadOrNull(store, id, attempt > 1);
        // What `change` saw: the live instance may be refreshed in place before the save
        // (another of this store's calls re-reads it), and the save must then be refused.
        const revision = session?.revision;
        const planned = change(session);
        if (
          planned.messages === undefined &&
          planned.state === undefined &&
          planned.title === undefined
        ) {
          return planned.result;
        }
        if (session === null) {
          if (options.createWithTitle === undefined) return planned.result;
          await store.create(
            {
              id,
              title: planned.title ?? options.createWithTitle,
              messages: planned.messages ?? [],
              ...(planned.state === undefined ? {} : { [STATE_FIELD]: planned.state }),
            },
            { fsync: options.durable },
          );
          return planned.result;
        }
        const next: Session = { ...session, revision: revision! };
        if (planned.messages !== undefined) next.messages = planned.messages;
        if (planned.title !== undefined) next.title = planned.title;
        if (planned.state !== undefined) {
          (next as Record<string, unknown>)[STATE_FIELD] = planned.state;
        }
        await store.save(next, {
          fsync: options.durable,
          ...(planned.allowShrink === true ? { allowShrink: true } : {}),
        });
        return planned.result;
      });
    } catch (error) {
      const raced = RevisionConflictError.isInstance(error) || AlreadyExistsError.isInstance(error);
      if (!raced || attempt >= ATTEMPTS) throw error;
    }
  }
}

/** The session (re-read when cached and `refresh`: another instance may have written it), or null. */
export async function loadOrNull(
  store: SessionStore,
  id: string,
  refresh: boolean,
): Promise<Session | null> {
  try {
    return await store.load(id, { refresh });
  } catch (error) {
    if (NotFoundError.isInstance(error)) return null;
    throw error;
  }
}

/**
 * The session as stored now, for a read that must see what other instances wrote (`getItems`
 * with `refresh`), decoded only when it changed. `store.load(id, { refresh: true })` reads,
 * parses and validates the whole document even when nothing changed (on fs at 10,000 items
 * that is most of a turn); this reads the stored document's revision first and compares it
 * with the cached copy's: equal, the cached copy is what is stored (every write bumps the
 * revision, B4); different, missing or not cached, the store re-reads it as before (with its
 * quarantine, A2, and deletion, B8, handling). Either way the load still repairs a turn whose
 * producer died (F1), as every `store.load` does.
 *
 * The revision is read under the session's lock, as the store's refreshing load reads: a
 * write of this process in flight (an `addItems` or a run's write not awaited yet) lands
 * first, so the read sees it. Called where this context holds the lock already, it does what
 * the refreshing load does there.
 */
export async function loadCurrent(store: SessionStore, id: string): Promise<Session | null> {
  let revision: number | null;
  try {
    revision = await store.withLock(
      id,
      async () => (await store.adapter.getDocument('sessions', id))?.revision ?? null,
    );
  } catch (error) {
    if (LockReentryError.isInstance(error)) return loadOrNull(store, id, true);
    throw error;
  }
  if (revision !== null) {
    const cached = await loadOrNull(store, id, false);
    if (cached !== null && cached.revision === revision) return cached;
  }
  return loadOrNull(store, id, true);
}
