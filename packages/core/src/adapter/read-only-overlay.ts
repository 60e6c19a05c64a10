import { InvalidInputError } from '../errors/input-errors.js';
import type {
  AppendLogResult,
  DeleteOptions,
  DocumentWrite,
  IdPage,
  IndexPage,
  ListDocumentsOptions,
  LogReadResult,
  LogRecordInput,
  PutResult,
  QuarantinedDocument,
  StorageAdapter,
  StoredDocument,
  WriteOptions,
} from './adapter.js';
import type { Collection } from './collections.js';

/** One write the overlay kept in memory instead of sending it to the backend. */
export interface HeldWrite {
  /** `put`, `delete`, `quarantine`, `index`, `append`, `delete-log`. */
  readonly kind: 'put' | 'delete' | 'quarantine' | 'index' | 'append' | 'delete-log';
  /** `sessions/<id>`, `index`, `journal <session>/<run>`… */
  readonly item: string;
}

/** A read-only store's adapter: reads go to the backend, writes stay in memory. */
export interface ReadOnlyOverlay extends StorageAdapter {
  /** Every write held in memory, in order: what the store would have written. */
  readonly heldWrites: readonly HeldWrite[];
}

const QUARANTINE_LOCATION = 'read-only (not moved)';

interface JournalOverlay {
  /** The backend's journal is hidden (deleted here). */
  deleted: boolean;
  appended: LogRecordInput[];
}

type IndexOverlay =
  | { status: 'missing' }
  | { status: 'corrupt'; reason: string }
  | { status: 'ok'; entries: unknown[] };

/**
 * What `createSessionStore({ readOnly: true })` puts between the store and its adapter. The
 * store runs as it always does (a load repairs a crashed turn, F1, and quarantines what does
 * not parse, A2; a listing rebuilds a missing index and drops ghosts, B7), and sees what it
 * wrote, but nothing reaches the backend: every write lands in this overlay, in memory, and
 * is gone at `close()`. So a read-only store shows the repaired view a load would give, and
 * leaves the store exactly as it was. The backend is only read (open it read-only too, so a
 * bug here would be a typed error rather than a write: `fsAdapter({ readOnly: true })`).
 *
 * Conditional writes, deltas and journal sequences behave as the contract says, against the
 * backend's data with the overlay's on top. Listings: ids the overlay deleted are left out,
 * ids it created come after the backend's; the index is read whole at the first listing and
 * served from memory (its cursors are the overlay's own).
 */
export function readOnlyOverlay(backend: StorageAdapter): ReadOnlyOverlay {
  const documents = new Map<string, StoredDocument | null>();
  const quarantined: Array<QuarantinedDocument & { bytes: string }> = [];
  const journals = new Map<string, JournalOverlay>();
  const heldWrites: HeldWrite[] = [];
  let index: IndexOverlay | null = null;

  const key = (collection: Collection, id: string) => `${collection}/${id}`;
  const hold = (kind: HeldWrite['kind'], item: string) => heldWrites.push({ kind, item });

  async function getDocument(collection: Collection, id: string): Promise<StoredDocument | null> {
    const held = documents.get(key(collection, id));
    if (held !== undefined) return held;
    return backend.getDocument(collection, id);
  }

  /** The backend's index, read whole once; then the overlay's copy. */
  async function materializedIndex(): Promise<IndexOverlay> {
    if (index !== null) return index;
    const entries: unknown[] = [];
    let cursor: string | null = null;
    let read: IndexOverlay | null = null;
    do {
      const page = await backend.listIndex({ cursor, limit: 1000 });
      if (page.status !== 'ok') {
        read = page.status === 'missing' ? { status: 'missing' } : page;
        break;
      }
      entries.push(...page.entries);
      cursor = page.nextCursor;
    } while (cursor !== null);
    index ??= read ?? { status: 'ok', entries };
    return index;
  }

  async function baseJournal(sessionId: string, runId: string): Promise<LogRecordInput[]> {
    const records: LogRecordInput[] = [];
    for (let after = 0; ; ) {
      const page = await backend.readLog(sessionId, runId, { afterSequence: after, limit: 10_000 });
      records.push(...page.records);
      const last = page.records.at(-1);
      if (last === undefined || page.records.length < 10_000) return records;
      after = last.sequence;
    }
  }

  const overlay: ReadOnlyOverlay = {
    specificationVersion: 'v1',
    name: backend.name,
    capabilities: { ...backend.capabilities, appendDeltas: true, indexWithDocument: true },
    ...(backend.liveness === undefined ? {} : { liveness: backend.liveness }),
    heldWrites,

    open: () => backend.open(),

    getDocument,

    async hasDocument(collection, id) {
      const held = documents.get(key(collection, id));
      if (held !== undefined) return held !== null;
      return backend.hasDocument(collection, id);
    },

    async putDocument(
      collection: Collection,
      id: string,
      write: DocumentWrite,
      options: WriteOptions,
    ): Promise<PutResult> {
      const current = await getDocument(collection, id);
      const currentRevision = current?.revision ?? null;
      if (options.expectedRevision !== currentRevision) return { ok: false, currentRevision };
      if (write.kind === 'delta' && current === null) return { ok: false, currentRevision };
      documents.set(
        key(collection, id),
        write.kind === 'full'
          ? { revision: write.revision, base: write.text, deltas: [] }
          : {
              revision: write.revision,
              base: current!.base,
              deltas: [...current!.deltas, write.text],
            },
      );
      hold('put', key(collection, id));
      if (options.indexEntry !== undefined)
        await overlay.putIndexEntry(options.indexEntry, options);
      return { ok: true };
    },

    async deleteDocument(collection: Collection, id: string, options: DeleteOptions) {
      const current = await getDocument(collection, id);
      if (
        options.expectedRevision !== undefined &&
        current?.revision !== options.expectedRevision
      ) {
        return { ok: false, currentRevision: current?.revision ?? null };
      }
      if (current !== null) {
        documents.set(key(collection, id), null);
        hold('delete', key(collection, id));
      }
      return { ok: true };
    },

    async listDocuments(collection: Collection, options: ListDocumentsOptions): Promise<IdPage> {
      const within = `${collection}/${options.prefix ?? ''}`;
      const mine = [...documents.entries()].filter(([held]) => held.startsWith(within));
      if (mine.length === 0) return backend.listDocuments(collection, options);
      const idOf = (held: string) => held.slice(collection.length + 1);
      // Cursors: `b<backend cursor>` through the backend's pages, less every id the overlay
      // holds; then `o<offset>` through the ids the overlay holds a document for.
      const cursor = options.cursor ?? 'b';
      const kept = mine.filter(([, value]) => value !== null).map(([held]) => idOf(held));
      if (cursor.startsWith('b')) {
        const hidden = new Set(mine.map(([held]) => idOf(held)));
        const page = await backend.listDocuments(collection, {
          ...options,
          cursor: cursor === 'b' ? null : cursor.slice(1),
        });
        const nextCursor =
          page.nextCursor !== null ? `b${page.nextCursor}` : kept.length > 0 ? 'o0' : null;
        return { ids: page.ids.filter((id) => !hidden.has(id)), nextCursor };
      }
      kept.sort();
      const offset = Number(cursor.slice(1)) || 0;
      const end = offset + options.limit;
      return { ids: kept.slice(offset, end), nextCursor: end < kept.length ? `o${end}` : null };
    },

    async quarantineDocument(collection: Collection, id: string, reason: string) {
      const current = await getDocument(collection, id);
      if (current === null) return QUARANTINE_LOCATION;
      documents.set(key(collection, id), null);
      const location = `${QUARANTINE_LOCATION}: ${collection}/${id}`;
      const bytes = [current.base, ...current.deltas].join('\n');
      quarantined.push({ collection, id, location, reason, quarantinedAt: Date.now(), bytes });
      hold('quarantine', key(collection, id));
      return location;
    },

    async listQuarantined() {
      const stored = await backend.listQuarantined();
      return [...stored, ...quarantined.map(({ bytes: _bytes, ...entry }) => entry)];
    },

    ...(backend.readQuarantined === undefined
      ? {}
      : {
          async readQuarantined(location: string) {
            const held = quarantined.find((entry) => entry.location === location);
            return held !== undefined ? held.bytes : backend.readQuarantined!(location);
          },
        }),

    async putIndexEntry(summary) {
      const current = await materializedIndex();
      // A missing or corrupt index stays so (the contract): the next listing rebuilds it.
      if (current.status !== 'ok') return;
      current.entries = sortEntries([
        ...current.entries.filter((entry) => entryId(entry) !== summary.id),
        summary,
      ]);
      hold('index', `index entry ${summary.id}`);
    },

    async deleteIndexEntry(id) {
      const current = await materializedIndex();
      if (current.status !== 'ok') return;
      const entries = current.entries.filter((entry) => entryId(entry) !== id);
      if (entries.length === current.entries.length) return;
      current.entries = entries;
      hold('index', `index entry ${id}`);
    },

    async replaceIndex(summaries) {
      index = { status: 'ok', entries: sortEntries([...summaries]) };
      hold('index', 'index');
    },

    async listIndex(options): Promise<IndexPage> {
      const current = await materializedIndex();
      if (current.status !== 'ok') return current;
      // The cursor is the last entry listed, not an offset: an entry removed between two
      // pages (a ghost, B7) must not make the next page skip one.
      const after = options.cursor === null ? null : parseCursor(options.cursor);
      const start =
        after === null ? 0 : current.entries.findIndex((entry) => compareEntries(entry, after) > 0);
      if (start < 0) return { status: 'ok', entries: [], nextCursor: null };
      const entries = current.entries.slice(start, start + options.limit);
      const last = entries.at(-1);
      const more = start + options.limit < current.entries.length && last !== undefined;
      return { status: 'ok', entries, nextCursor: more ? sortKey(last).join(':') : null };
    },

    async appendLog(sessionId, runId, records, _options): Promise<AppendLogResult> {
      const journal = journals.get(`${sessionId}/${runId}`);
      const last =
        journal?.appended.at(-1)?.sequence ??
        (journal?.deleted === true
          ? 0
          : ((await baseJournal(sessionId, runId)).at(-1)?.sequence ?? 0));
      if (records[0]?.sequence !== last + 1) return { ok: false, lastSequence: last };
      const held = journal ?? { deleted: false, appended: [] };
      held.appended.push(...records.map(({ sequence, text }) => ({ sequence, text })));
      journals.set(`${sessionId}/${runId}`, held);
      hold('append', `journal ${sessionId}/${runId}`);
      return { ok: true };
    },

    async readLog(sessionId, runId, options): Promise<LogReadResult> {
      const journal = journals.get(`${sessionId}/${runId}`);
      if (journal === undefined) return backend.readLog(sessionId, runId, options);
      const stored = journal.deleted
        ? { exists: false, records: [], tornTail: false }
        : await backend.readLog(sessionId, runId, options);
      const records = [...stored.records];
      for (const record of journal.appended) {
        if (record.sequence > options.afterSequence && records.length < options.limit) {
          records.push(record);
        }
      }
      return {
        exists: stored.exists || journal.appended.length > 0,
        records,
        // An append after a torn tail replaces it (E3).
        tornTail: stored.tornTail && journal.appended.length === 0,
      };
    },

    async listLogs(sessionId) {
      const runIds = new Set(await backend.listLogs(sessionId));
      for (const [held, journal] of journals) {
        const [heldSession, runId] = held.split('/') as [string, string];
        if (heldSession !== sessionId) continue;
        if (journal.appended.length > 0) runIds.add(runId);
        else if (journal.deleted) runIds.delete(runId);
      }
      return [...runIds].sort();
    },

    async deleteLogs(sessionId, options) {
      for (const runId of await overlay.listLogs(sessionId)) {
        await overlay.deleteLog(sessionId, runId, options);
      }
    },

    async deleteLog(sessionId, runId) {
      journals.set(`${sessionId}/${runId}`, { deleted: true, appended: [] });
      hold('delete-log', `journal ${sessionId}/${runId}`);
    },

    // Nothing to make durable: nothing is written.
    sync: async () => undefined,
    close: () => backend.close(),
  };
  return overlay;
}

function entryId(entry: unknown): unknown {
  return typeof entry === 'object' && entry !== null ? (entry as { id?: unknown }).id : undefined;
}

/** Where an entry sorts: newest first (`updatedAt` descending), then `id` ascending (B7). */
function sortKey(entry: unknown): [number, string] {
  const record =
    typeof entry === 'object' && entry !== null ? (entry as Record<string, unknown>) : {};
  return [Number(record.updatedAt) || 0, String(record.id)];
}

/** `<updatedAt>:<id>` of the last entry of the page before (ids hold no `:`, A1). */
function parseCursor(cursor: string): unknown[] {
  const colon = cursor.indexOf(':');
  const updatedAt = Number(cursor.slice(0, colon));
  if (colon < 1 || !Number.isFinite(updatedAt)) {
    throw new InvalidInputError('list(): `cursor` is not one a listing of this store returned');
  }
  return [updatedAt, cursor.slice(colon + 1)];
}

function compareEntries(left: unknown, rightKey: unknown[]): number {
  const [leftTime, leftId] = sortKey(left);
  const rightTime = Number(rightKey[0]) || 0;
  const rightId = String(rightKey[1]);
  if (leftTime !== rightTime) return rightTime - leftTime;
  return leftId === rightId ? 0 : leftId < rightId ? -1 : 1;
}

function sortEntries(entries: unknown[]): unknown[] {
  return entries.sort((left, right) => compareEntries(left, sortKey(right)));
}
