import { BackendError } from '../errors/storage-errors.js';
import { assertCollection, assertDocumentId, randomId } from '../validation/ids.js';
import type { SessionSummary } from '../validation/schemas.js';
import type {
  AdapterCapabilities,
  AppendLogResult,
  Collection,
  DeleteOptions,
  DocumentWrite,
  IdPage,
  IndexPage,
  ListDocumentsOptions,
  LogReadResult,
  LogRecordInput,
  PutResult,
  QuarantinedDocument,
  StorageAdapterV1,
  StoredDocument,
  WriteOptions,
} from './adapter.js';
import type { AdapterLiveness } from './liveness.js';

/**
 * The data of one in-memory "backend". Adapters created over the same backend see the
 * same data, which is how tests open a second store "after a restart".
 */
export interface MemoryBackend {
  documents: Map<string, { revision: number; base: string; deltas: string[] }>;
  /**
   * B7: the session index; null when it is missing (removed out of band). A missing index
   * is never patched by a put or a delete: `listIndex` reports it missing, and core
   * rebuilds it from the documents.
   */
  index: Map<string, SessionSummary> | null;
  logs: Map<string, LogRecordInput[]>;
  quarantine: QuarantinedDocument[];
  quarantinedBytes: Map<string, string>;
}

export function createMemoryBackend(): MemoryBackend {
  return {
    documents: new Map(),
    // A new backend has no sessions, so its (empty) index is complete.
    index: new Map(),
    logs: new Map(),
    quarantine: [],
    quarantinedBytes: new Map(),
  };
}

const namedBackends = new Map<string, MemoryBackend>();

export interface MemoryAdapterOptions {
  /**
   * Adapters created with the same namespace in one process share one backend.
   * @default a fresh private backend
   */
  namespace?: string;
  /** An explicit backend to share; takes precedence over `namespace`. */
  backend?: MemoryBackend;
}

const memoryCapabilities: AdapterCapabilities = {
  durability: 'process',
  conditionalWrites: true,
  sharedAcrossProcesses: false,
  appendDeltas: true,
  nativeAppend: true,
  groupCommit: true,
  clusterSafeKeys: false,
  indexWithDocument: true,
  gaps: [],
};

/**
 * The in-memory reference adapter: the executable statement of what every primitive
 * means. Data lives as long as the process ("process" durability); every clause that
 * does not need a second process holds on it.
 */
export function memoryAdapter(options: MemoryAdapterOptions = {}): StorageAdapterV1 {
  let backend: MemoryBackend;
  if (options.backend !== undefined) backend = options.backend;
  else if (options.namespace !== undefined) {
    backend = namedBackends.get(options.namespace) ?? createMemoryBackend();
    namedBackends.set(options.namespace, backend);
  } else backend = createMemoryBackend();
  return new MemoryAdapter(backend);
}

/** Forgets a named backend (tests dispose of what they create). */
export function dropMemoryNamespace(namespace: string): void {
  namedBackends.delete(namespace);
}

/** A1: every document id is checked for its collection's shape before it is used. */
function documentKey(collection: Collection, id: string): string {
  assertDocumentId(collection, id);
  return `${collection}/${id}`;
}

function logKey(sessionId: string, runId: string): string {
  return `${sessionId}/${runId}`;
}

/**
 * E9: who watches which journal of a backend (`watchLog`), kept beside the backend rather
 * than in it, so a backend object made by hand needs no field for it.
 */
const logWatchers = new WeakMap<MemoryBackend, Map<string, Set<() => void>>>();

function watchersOf(backend: MemoryBackend): Map<string, Set<() => void>> {
  let watchers = logWatchers.get(backend);
  if (watchers === undefined) {
    watchers = new Map();
    logWatchers.set(backend, watchers);
  }
  return watchers;
}

function compareSummaries(left: SessionSummary, right: SessionSummary): number {
  if (left.updatedAt !== right.updatedAt) return right.updatedAt - left.updatedAt;
  return left.id < right.id ? -1 : left.id > right.id ? 1 : 0;
}

/**
 * F1: the memory adapters of this process by owner id: open (true) or closed (false). A
 * memory backend lives in one process, so an adapter that closed is certainly gone, and an
 * owner id not listed here is another process's (unknown).
 */
const memoryOwners = new Map<string, boolean>();

class MemoryAdapter implements StorageAdapterV1 {
  readonly specificationVersion = 'v1' as const;
  readonly name = 'memory';
  readonly capabilities = memoryCapabilities;
  readonly liveness: AdapterLiveness = {
    ownerId: `memory:${randomId()}`,
    ownerState: async (ownerId) => {
      const open = memoryOwners.get(ownerId);
      return open === undefined ? 'unknown' : open ? 'alive' : 'gone';
    },
  };
  private closed = false;

  constructor(private readonly backend: MemoryBackend) {
    memoryOwners.set(this.liveness.ownerId, true);
  }

  /** A backend without an index and without sessions starts an empty one (nothing to rebuild). */
  async open(): Promise<void> {
    if (this.backend.index !== null) return;
    const hasSessions = [...this.backend.documents.keys()].some((key) =>
      key.startsWith('sessions/'),
    );
    if (!hasSessions) this.backend.index = new Map();
  }

  private assertOpen(operation: string): void {
    if (this.closed) throw new BackendError(this.name, `${operation} (adapter closed)`);
  }

  async getDocument(collection: Collection, id: string): Promise<StoredDocument | null> {
    this.assertOpen('read a document');
    const stored = this.backend.documents.get(documentKey(collection, id));
    if (stored === undefined) return null;
    return { revision: stored.revision, base: stored.base, deltas: [...stored.deltas] };
  }

  async hasDocument(collection: Collection, id: string): Promise<boolean> {
    this.assertOpen('read a document');
    return this.backend.documents.has(documentKey(collection, id));
  }

  async putDocument(
    collection: Collection,
    id: string,
    write: DocumentWrite,
    options: WriteOptions,
  ): Promise<PutResult> {
    this.assertOpen('write a document');
    const key = documentKey(collection, id);
    const stored = this.backend.documents.get(key);
    const currentRevision = stored?.revision ?? null;
    if (currentRevision !== options.expectedRevision) return { ok: false, currentRevision };
    if (write.kind === 'delta') {
      if (stored === undefined) return { ok: false, currentRevision: null };
      this.backend.documents.set(key, {
        revision: write.revision,
        base: stored.base,
        deltas: [...stored.deltas, write.text],
      });
    } else {
      this.backend.documents.set(key, { revision: write.revision, base: write.text, deltas: [] });
    }
    if (options.indexEntry !== undefined && collection === 'sessions') {
      await this.putIndexEntry(options.indexEntry);
    }
    return { ok: true };
  }

  async deleteDocument(
    collection: Collection,
    id: string,
    options: DeleteOptions,
  ): Promise<PutResult> {
    this.assertOpen('delete a document');
    const key = documentKey(collection, id);
    const stored = this.backend.documents.get(key);
    if (options.expectedRevision !== undefined && stored?.revision !== options.expectedRevision) {
      return { ok: false, currentRevision: stored?.revision ?? null };
    }
    this.backend.documents.delete(key);
    return { ok: true };
  }

  async listDocuments(collection: Collection, options: ListDocumentsOptions): Promise<IdPage> {
    this.assertOpen('list documents');
    assertCollection(collection);
    const prefix = `${collection}/${options.prefix ?? ''}`;
    const ids = [...this.backend.documents.keys()]
      .filter((key) => key.startsWith(prefix))
      .map((key) => key.slice(collection.length + 1))
      .sort();
    const start = options.cursor === null ? 0 : ids.findIndex((id) => id > options.cursor!);
    const from = start < 0 ? ids.length : start;
    const page = ids.slice(from, from + options.limit);
    const last = page.at(-1);
    const nextCursor = from + options.limit < ids.length && last !== undefined ? last : null;
    return { ids: page, nextCursor };
  }

  async quarantineDocument(collection: Collection, id: string, reason: string): Promise<string> {
    this.assertOpen('quarantine a document');
    const key = documentKey(collection, id);
    const stored = this.backend.documents.get(key);
    const location = `memory://quarantine/${collection}/${id}/${this.backend.quarantine.length + 1}`;
    if (stored !== undefined) {
      this.backend.quarantinedBytes.set(location, [stored.base, ...stored.deltas].join('\n'));
      this.backend.documents.delete(key);
    }
    this.backend.quarantine.push({ collection, id, location, reason, quarantinedAt: Date.now() });
    return location;
  }

  async listQuarantined(): Promise<QuarantinedDocument[]> {
    this.assertOpen('list quarantined documents');
    return [...this.backend.quarantine];
  }

  async readQuarantined(location: string): Promise<string | null> {
    return this.backend.quarantinedBytes.get(location) ?? null;
  }

  /**
   * B7: a missing index is not patched: an index holding only the sessions saved since would
   * hide every other session. The entry is dropped; the next listing rebuilds the index.
   */
  async putIndexEntry(summary: SessionSummary): Promise<void> {
    this.assertOpen('write the index');
    this.backend.index?.set(summary.id, { ...summary });
  }

  async deleteIndexEntry(id: string): Promise<void> {
    this.assertOpen('write the index');
    this.backend.index?.delete(id);
  }

  async replaceIndex(summaries: SessionSummary[]): Promise<void> {
    this.assertOpen('write the index');
    this.backend.index = new Map(summaries.map((summary) => [summary.id, { ...summary }]));
  }

  async listIndex(options: { cursor: string | null; limit: number }): Promise<IndexPage> {
    this.assertOpen('read the index');
    if (this.backend.index === null) return { status: 'missing' };
    const sorted = [...this.backend.index.values()].sort(compareSummaries);
    let start = 0;
    if (options.cursor !== null) {
      const [updatedAtText, id] = options.cursor.split(':');
      const after = { updatedAt: Number(updatedAtText), id: id ?? '' } as SessionSummary;
      start = sorted.findIndex((entry) => compareSummaries(entry, after) > 0);
      if (start < 0) start = sorted.length;
    }
    const page = sorted.slice(start, start + options.limit);
    const last = page.at(-1);
    const nextCursor =
      start + options.limit < sorted.length && last !== undefined
        ? `${last.updatedAt}:${last.id}`
        : null;
    return { status: 'ok', entries: page.map((entry) => ({ ...entry })), nextCursor };
  }

  async appendLog(
    sessionId: string,
    runId: string,
    records: LogRecordInput[],
  ): Promise<AppendLogResult> {
    this.assertOpen('append to a journal');
    const key = logKey(sessionId, runId);
    const log = this.backend.logs.get(key) ?? [];
    const lastSequence = log.at(-1)?.sequence ?? 0;
    if (records[0] !== undefined && records[0].sequence !== lastSequence + 1) {
      return { ok: false, lastSequence };
    }
    log.push(...records.map((record) => ({ ...record })));
    this.backend.logs.set(key, log);
    const watching = logWatchers.get(this.backend)?.get(key);
    // Never from inside the append: the watcher runs once the appender has moved on.
    if (watching !== undefined) for (const onAppend of watching) queueMicrotask(onAppend);
    return { ok: true };
  }

  watchLog(sessionId: string, runId: string, onAppend: () => void): () => void {
    const key = logKey(sessionId, runId);
    const watchers = watchersOf(this.backend);
    const set = watchers.get(key) ?? new Set<() => void>();
    watchers.set(key, set);
    // Each subscription its own function, so one stopped never stops another; a call
    // already queued when it stopped is dropped.
    let active = true;
    const watcher = () => {
      if (active) onAppend();
    };
    set.add(watcher);
    return () => {
      active = false;
      set.delete(watcher);
      if (set.size === 0 && watchers.get(key) === set) watchers.delete(key);
    };
  }

  async readLog(
    sessionId: string,
    runId: string,
    options: { afterSequence: number; limit: number },
  ): Promise<LogReadResult> {
    this.assertOpen('read a journal');
    const log = this.backend.logs.get(logKey(sessionId, runId));
    if (log === undefined) return { exists: false, records: [], tornTail: false };
    const records = log
      .filter((record) => record.sequence > options.afterSequence)
      .slice(0, options.limit);
    return { exists: true, records, tornTail: false };
  }

  async listLogs(sessionId: string): Promise<string[]> {
    const prefix = `${sessionId}/`;
    return [...this.backend.logs.keys()]
      .filter((key) => key.startsWith(prefix))
      .map((key) => key.slice(prefix.length));
  }

  async deleteLogs(sessionId: string): Promise<void> {
    for (const runId of await this.listLogs(sessionId)) {
      this.backend.logs.delete(logKey(sessionId, runId));
    }
  }

  async deleteLog(sessionId: string, runId: string): Promise<void> {
    this.assertOpen('delete a journal');
    this.backend.logs.delete(logKey(sessionId, runId));
  }

  async sync(): Promise<void> {}

  async close(): Promise<void> {
    this.closed = true;
    memoryOwners.set(this.liveness.ownerId, false);
  }
}
