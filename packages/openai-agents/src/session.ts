import { createHash, randomUUID } from 'node:crypto';
import {
  InvalidConfigError,
  InvalidInputError,
  type Message,
  type SessionStore,
} from '@keepsake/core';
import {
  type AgentInputItem,
  protocol,
  type SessionHistoryRewriteArgs,
  type SessionHistoryRewriteAwareSession,
  type SessionHistoryTransaction,
  type SessionHistoryTransactionArgs,
  type SessionHistoryTransactionAwareSession,
  UserError,
} from '@openai/agents-core';
import { keepsakeIdOf } from './ids.js';
import { decodeItem, encodeItem, type StoredItem } from './item-codec.js';
import { liveRunOf } from './live-runs.js';
import { stateOf } from './session-state.js';
import { loadCurrent, loadOrNull, updateSession } from './session-writes.js';
import {
  historyOf,
  ITEMS_FIELD,
  itemCountOf,
  itemsOfMessage,
  messageOfItems,
  storedItemsOf,
  titleOfItems,
} from './stored-message.js';

export interface KeepsakeSessionOptions {
  /** The store the session lives in; every server instance opens its own over one backend. */
  store: SessionStore;
  /**
   * The Agents SDK session id: any string (it is stored under an A1-safe Keepsake id, see
   * `keepsakeIdOf`). A random UUID when omitted, as `MemorySession` does.
   */
  sessionId?: string;
  /** The title listings show (`store.list()`, `keepsake ls`). @default the start of the first user message */
  title?: string;
  /**
   * Check the stored session on every `getItems`, in case another server instance changed it
   * since this store cached it: the stored document's revision is compared with the cached
   * copy's, and the document is decoded again only when they differ. Turn it off only when one
   * process is the only writer of its sessions: reads are then served from the store's cache
   * without reading the backend. Writes are safe either way (B4: a write on a stale copy is
   * refused by its revision, read again and retried).
   * @default true
   */
  refresh?: boolean;
  /** B3: `addItems` resolves once the items are durable (fsync, or the backend's confirmation). @default true */
  durable?: boolean;
}

const knownOptions: ReadonlySet<string> = new Set([
  'store',
  'sessionId',
  'title',
  'refresh',
  'durable',
]);

/**
 * The Agents SDK's `Session` on a Keepsake store: conversation history that survives restarts
 * and is shared safely by server instances over one backend (local directory, Redis, S3,
 * memory).
 *
 * - Each item is a Keepsake message holding the item exactly as given (item-codec.ts), with
 *   its text and role beside it for Keepsake's own tools (`keepsake show`, memory providers).
 * - `addItems` resolves once the items are durable (B3). Appends are delta writes on backends
 *   that have them (fs, Redis): a turn costs what it adds, not the whole history.
 * - `getItems(limit)` gives the last `limit` items in order, decoding only those.
 * - `popItem`, `clearSession` and every other change read, change and write under the
 *   session's lock, conditionally on its revision (B4): two instances never lose each
 *   other's items. A pop or a clear is a deliberate shrink: the revision before it is
 *   retained (B5, `store.retainedRevisions`).
 * - The session is listed by `store.list()` with a title.
 */
export class KeepsakeSession
  implements SessionHistoryRewriteAwareSession, SessionHistoryTransactionAwareSession
{
  readonly store: SessionStore;
  /** The Keepsake session id the history is stored under. */
  readonly keepsakeId: string;
  private readonly sessionId: string;
  private readonly title: string | undefined;
  private readonly refresh: boolean;
  private readonly durable: boolean;

  constructor(options: KeepsakeSessionOptions) {
    if (typeof options !== 'object' || options === null) {
      throw new InvalidConfigError('KeepsakeSession needs an options object with a `store`');
    }
    for (const key of Object.keys(options)) {
      if (!knownOptions.has(key)) {
        throw new InvalidConfigError(
          `Unknown option \`${key}\` of KeepsakeSession (the options are ${[...knownOptions].join(', ')})`,
        );
      }
    }
    const { store } = options;
    if (typeof store !== 'object' || store === null || typeof store.beginRun !== 'function') {
      throw new InvalidConfigError(
        'Option `store` must be a Keepsake SessionStore (createSessionStore({ adapter }))',
      );
    }
    for (const name of ['refresh', 'durable'] as const) {
      if (options[name] !== undefined && typeof options[name] !== 'boolean') {
        throw new InvalidConfigError(`Option \`${name}\` of KeepsakeSession must be a boolean`);
      }
    }
    if (options.title !== undefined && typeof options.title !== 'string') {
      throw new InvalidConfigError('Option `title` of KeepsakeSession must be a string');
    }
    this.store = store;
    this.sessionId = options.sessionId ?? randomUUID();
    this.keepsakeId = keepsakeIdOf(this.sessionId);
    this.title = options.title;
    this.refresh = options.refresh ?? true;
    this.durable = options.durable ?? true;
  }

  async getSessionId(): Promise<string> {
    return this.sessionId;
  }

  async getItems(limit?: number): Promise<AgentInputItem[]> {
    if (limit !== undefined && (typeof limit !== 'number' || Number.isNaN(limit))) {
      throw new InvalidInputError('getItems(limit): limit must be a number', { path: 'limit' });
    }
    // Outside the lock: a load may repair a turn whose producer died (F1), under the lock.
    const session = this.refresh
      ? await loadCurrent(this.store, this.keepsakeId)
      : await loadOrNull(this.store, this.keepsakeId, false);
    if (session === null) return [];
    return historyOf(session.messages, limit);
  }

  async addItems(items: AgentInputItem[]): Promise<void> {
    if (!Array.isArray(items)) {
      throw new InvalidInputError('addItems() takes an array of items', { path: 'items' });
    }
    if (items.length === 0) return;
    // Checked and copied before anything is written: a bad item writes nothing (A4).
    const stored = items.map((item, index) => encodeItem(item, `items[${index}]`));
    const live = liveRunOf(this.store, this.keepsakeId);
    await updateSession(
      this.store,
      this.keepsakeId,
      { durable: this.durable, createWithTitle: this.title ?? titleOfItems(items) },
      (session) => {
        const now = this.store.clock.now();
        const added = () => stored.map((one, index) => messageOfItems([one], [items[index]!], now));
        const messages =
          session === null
            ? added()
            : live !== undefined
              ? live.planAppend(session, stored, items, now)
              : [...session.messages, ...added()];
        // E6, D4: the run was stopped or taken over meanwhile; what it adds now is not kept.
        if (messages === null) return { result: undefined };
        const title =
          session !== null && session.title === '' && this.title === undefined
            ? titleOfItems(items)
            : '';
        return { result: undefined, messages, ...(title === '' ? {} : { title }) };
      },
    );
    live?.appended();
  }

  async popItem(): Promise<AgentInputItem | undefined> {
    return updateSession(this.store, this.keepsakeId, { durable: this.durable }, (session) => {
      if (session === null) return { result: undefined };
      const messages = session.messages;
      for (let index = messages.length - 1; index >= 0; index--) {
        const message = messages[index]!;
        const count = itemCountOf(message);
        if (count === 0) continue;
        const items = itemsOfMessage(message);
        const popped = items.at(-1);
        const next = [...messages];
        if (count > 1) {
          // A streamed turn's input holds several items: it loses its last one.
          next[index] = {
            ...message,
            [ITEMS_FIELD]: storedItemsOf(message)!.slice(0, -1),
          } as Message;
        } else {
          next.splice(index, 1);
        }
        return { result: popped, messages: next, allowShrink: true };
      }
      return { result: undefined };
    });
  }

  async clearSession(): Promise<void> {
    await updateSession(this.store, this.keepsakeId, { durable: this.durable }, (session) => {
      if (session === null) return { result: undefined };
      const state = { ...stateOf(session) };
      delete state.transactions;
      return { result: undefined, messages: [], state, allowShrink: true };
    });
  }

  /**
   * Replaces the history with a compaction result in one write (B1), instead of the clear and
   * rebuild the runner falls back to, which a crash between the two would leave empty.
   */
  async replaceHistoryWithCompaction(items: AgentInputItem[]): Promise<void> {
    const stored = items.map((item, index) => encodeItem(item, `items[${index}]`));
    await updateSession(
      this.store,
      this.keepsakeId,
      { durable: this.durable, createWithTitle: this.title ?? titleOfItems(items) },
      () => {
        const now = this.store.clock.now();
        const messages = stored.map((one, index) => messageOfItems([one], [items[index]!], now));
        return { result: undefined, messages, allowShrink: true };
      },
    );
  }

  /** `MemorySession`'s history rewrite (replace a function call by its call id), in one write. */
  async applyHistoryMutations(args: SessionHistoryRewriteArgs): Promise<void> {
    const mutations = args?.mutations ?? [];
    if (mutations.length === 0) return;
    for (const [index, mutation] of mutations.entries()) {
      encodeItem(mutation.replacement, `mutations[${index}].replacement`);
    }
    await updateSession(this.store, this.keepsakeId, { durable: this.durable }, (session) => {
      if (session === null) return { result: undefined };
      let messages = session.messages;
      const now = this.store.clock.now();
      for (const mutation of mutations) {
        if (mutation.type !== 'replace_function_call') continue;
        let kept = false;
        const next: Message[] = [];
        for (const message of messages) {
          const stored = storedItemsOf(message);
          if (stored === null) {
            next.push(message);
            continue;
          }
          const decoded = stored.map(decodeItem);
          const keep: StoredItem[] = [];
          let changed = false;
          decoded.forEach((item, position) => {
            const matches =
              (item as { type?: unknown }).type === 'function_call' &&
              (item as { callId?: unknown }).callId === mutation.callId;
            if (!matches) {
              keep.push(stored[position]!);
              return;
            }
            changed = true;
            if (!kept) {
              keep.push(encodeItem(structuredClone(mutation.replacement), 'replacement'));
              kept = true;
            }
          });
          if (!changed) next.push(message);
          else if (keep.length > 0) {
            const replaced = messageOfItems(keep, keep.map(decodeItem), now, message.id);
            next.push({ ...message, content: replaced.content, [ITEMS_FIELD]: keep } as Message);
          }
        }
        messages = next;
      }
      return { result: undefined, messages, allowShrink: true };
    });
  }

  /**
   * `MemorySession`'s atomic, idempotent history change (the runner uses it to persist output
   * an output guardrail blocked): the items and the operation id are written in one save, and
   * the same operation again is applied once. Its digest, not the transaction, is kept.
   */
  async applyHistoryTransaction(args: SessionHistoryTransactionArgs): Promise<void> {
    const { operationId, transaction } = checkedTransaction(args);
    const digest = digestOf(transaction);
    await updateSession(
      this.store,
      this.keepsakeId,
      { durable: this.durable, createWithTitle: this.title ?? '' },
      (session) => {
        const state = session === null ? {} : stateOf(session);
        const applied = state.transactions?.[operationId];
        if (applied !== undefined) {
          if (applied !== digest) {
            throw new UserError(
              'Session history operation was already applied with a different transaction.',
            );
          }
          return { result: undefined };
        }
        const messages = session?.messages ?? [];
        const now = this.store.clock.now();
        const toMessages = (items: AgentInputItem[]) =>
          items.map((item, index) =>
            messageOfItems([encodeItem(item, `items[${index}]`)], [item], now),
          );
        let next: Message[];
        if (transaction.type === 'append_items') {
          next = [...messages, ...toMessages(transaction.items)];
        } else {
          next = replaceSuffix(
            messages,
            transaction.expectedSuffix,
            toMessages(transaction.replacement),
          );
        }
        return {
          result: undefined,
          messages: next,
          state: { ...state, transactions: { ...state.transactions, [operationId]: digest } },
          allowShrink: true,
        };
      },
    );
  }
}

/** The transcript with its history suffix `expected` replaced; `UserError` when it does not match. */
function replaceSuffix(
  messages: readonly Message[],
  expected: AgentInputItem[],
  replacement: Message[],
): Message[] {
  // Walk back over whole messages until they hold `expected.length` items.
  let count = 0;
  let start = messages.length;
  while (start > 0 && count < expected.length) {
    start--;
    count += itemCountOf(messages[start]!);
  }
  const actual = messages.slice(start).flatMap(itemsOfMessage);
  if (
    count !== expected.length ||
    actual.length !== expected.length ||
    canonical(actual) !== canonical(expected)
  ) {
    throw new UserError('Session history suffix no longer matches the transaction precondition.');
  }
  return [...messages.slice(0, start), ...replacement];
}

function checkedTransaction(args: SessionHistoryTransactionArgs): {
  operationId: string;
  transaction: SessionHistoryTransaction;
} {
  const operationId = args?.operationId;
  const transaction = args?.transaction;
  if (typeof operationId !== 'string' || operationId.trim() === '') {
    throw new UserError('Session history transaction operationId must be a non-empty string.');
  }
  if (typeof transaction !== 'object' || transaction === null) {
    throw new UserError('Session history transaction must be an object.');
  }
  const lists =
    transaction.type === 'append_items'
      ? [transaction.items]
      : transaction.type === 'replace_suffix'
        ? [transaction.expectedSuffix, transaction.replacement]
        : null;
  if (lists === null) throw new UserError('Unsupported session history transaction type.');
  for (const list of lists) {
    if (!Array.isArray(list) || !list.every((item) => protocol.ModelItem.safeParse(item).success)) {
      throw new UserError('Session history transaction items contain invalid or unsupported data.');
    }
  }
  return { operationId, transaction: structuredClone(transaction) };
}

function digestOf(transaction: SessionHistoryTransaction): string {
  return createHash('sha256').update(canonical(transaction)).digest('base64url');
}

/** JSON with sorted keys and bytes tagged: equal for structurally equal values. */
function canonical(value: unknown): string {
  return JSON.stringify(sortKeys(encodeItem({ value } as unknown as AgentInputItem, 'item')));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (typeof value !== 'object' || value === null) return value;
  const record = value as Record<string, unknown>;
  return Object.fromEntries(
    Object.keys(record)
      .sort()
      .map((key) => [key, sortKeys(record[key])]),
  );
}
