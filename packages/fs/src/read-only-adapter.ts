import {
  BackendError,
  type Collection,
  InvalidConfigError,
  type ListDocumentsOptions,
  ReadOnlyError,
  type StorageAdapterV1,
} from '@keepsake/core';
import { createAdapterContext } from './context.js';
import { DocumentStore } from './document-store.js';
import { ADAPTER_NAME, backendCall, isNotFound } from './errors.js';
import { fsCapabilities } from './fs-capabilities.js';
import { IndexStore } from './index-store.js';
import { LAYOUT_VERSION } from './layout.js';
import type { ResolvedFsAdapterOptions } from './options.js';
import { OwnerLiveness } from './owner-liveness.js';
import { QuarantineStore } from './quarantine.js';
import { ReadOnlyJournals } from './read-only-journals.js';

/** What a read-only open found that a writing open would have changed (see `readOnlyFsReport`). */
export interface ReadOnlyFsReport {
  /** Group-commit logs of dead processes, which a writing open replays and removes. */
  readonly deadLogs: number;
  /** Journals (`<session>/<run>`) those logs hold appends of. */
  readonly journalsInDeadLogs: readonly string[];
}

const reports = new WeakMap<StorageAdapterV1, () => ReadOnlyFsReport>();

/**
 * What the read-only open of `adapter` found (null for an adapter that is not a read-only fs
 * adapter, or not open yet): what a writing open would replay. For tools that tell an
 * operator what a repair would do (`keepsake repair --dry-run`).
 */
export function readOnlyFsReport(adapter: StorageAdapterV1): ReadOnlyFsReport | null {
  return reports.get(adapter)?.() ?? null;
}

/**
 * `fsAdapter({ directory, readOnly: true })`: a store opened for inspection. Its open creates
 * nothing (no directory, no layout marker, no index), replays no group-commit log into a
 * journal and removes none (the logs of dead processes are read into memory, and reads
 * return what a replay would have appended: read-only-journals.ts), sweeps no leftover and
 * takes no lock; reads are the writing adapter's reads, which take no lock either. Every write
 * primitive rejects with `ReadOnlyError`, before it touches anything. `sync()` has nothing to
 * flush and resolves.
 */
export function readOnlyFsAdapter(resolved: ResolvedFsAdapterOptions): StorageAdapterV1 {
  const context = createAdapterContext(resolved);
  const { fileSystem, layout, segments } = context;
  const documents = new DocumentStore(context);
  const index = new IndexStore(context);
  const quarantine = new QuarantineStore(context);
  const journals = new ReadOnlyJournals(context);
  const liveness = new OwnerLiveness(fileSystem);
  let opened = false;
  let closed = false;

  function call<T>(operation: string, action: () => Promise<T>): Promise<T> {
    if (closed) {
      return Promise.reject(new BackendError(ADAPTER_NAME, `${operation}: the adapter is closed`));
    }
    return backendCall(operation, action);
  }

  function refuse(operation: string): Promise<never> {
    return Promise.reject(new ReadOnlyError('The fs adapter', operation));
  }

  const adapter: StorageAdapterV1 = {
    specificationVersion: 'v1',
    name: ADAPTER_NAME,
    capabilities: fsCapabilities,
    liveness,

    open: () =>
      call('open', async () => {
        await liveness.learnBoot();
        try {
          const stats = await fileSystem.stat(layout.root);
          if (!stats.isDirectory()) throw new Error(`${layout.root} is not a directory`);
        } catch (error) {
          throw new BackendError(
            ADAPTER_NAME,
            `open ${layout.root} read-only (option \`directory\`): ${isNotFound(error) ? 'there is no store there, and a read-only open creates nothing' : (error as Error).message}`,
            { cause: error },
          );
        }
        segments.setLocalDisk((await fileSystem.isLocalDisk?.(layout.root)) ?? false);
        await checkLayout(resolved, segments.readOptional(layout.marker));
        await journals.loadDeadLogs();
        opened = true;
      }),

    getDocument: (collection: Collection, id: string) =>
      call(`read ${collection}/${id}`, () => documents.get(collection, id)),
    hasDocument: (collection: Collection, id: string) =>
      call(`check ${collection}/${id}`, () => documents.has(collection, id)),
    listDocuments: (collection: Collection, options: ListDocumentsOptions) =>
      call(`list ${collection}`, () => documents.list(collection, options)),
    listQuarantined: () => call('list quarantine', () => quarantine.list()),
    readQuarantined: (location: string) =>
      call('read quarantined bytes', () => quarantine.read(location)),
    listIndex: (options: { cursor: string | null; limit: number }) =>
      call('read the index', () => index.list(options.cursor, options.limit)),
    readLog: (sessionId, runId, options) =>
      call(`read journal ${sessionId}/${runId}`, () =>
        journals.read(sessionId, runId, options.afterSequence, options.limit),
      ),
    listLogs: (sessionId: string) =>
      call(`list journals of ${sessionId}`, () => journals.list(sessionId)),

    putDocument: (collection, id) => refuse(`write ${collection}/${id}`),
    deleteDocument: (collection, id) => refuse(`delete ${collection}/${id}`),
    quarantineDocument: (collection, id) => refuse(`quarantine ${collection}/${id}`),
    putIndexEntry: () => refuse('write the index'),
    deleteIndexEntry: () => refuse('write the index'),
    replaceIndex: () => refuse('replace the index'),
    appendLog: (sessionId, runId) => refuse(`append to journal ${sessionId}/${runId}`),
    deleteLogs: (sessionId) => refuse(`delete journals of ${sessionId}`),
    deleteLog: (sessionId, runId) => refuse(`delete journal ${sessionId}/${runId}`),

    // Nothing was written, so nothing is owed a flush.
    sync: () => call('sync', async () => undefined),
    close: async () => {
      if (closed) return;
      closed = true;
      liveness.release();
    },
  };
  reports.set(adapter, () =>
    opened
      ? { deadLogs: journals.deadLogCount, journalsInDeadLogs: journals.replayedJournals }
      : { deadLogs: 0, journalsInDeadLogs: [] },
  );
  return adapter;
}

/** A directory of a later layout is refused, as a writing open refuses it; none is written. */
async function checkLayout(
  resolved: ResolvedFsAdapterOptions,
  marker: Promise<Uint8Array | null>,
): Promise<void> {
  const bytes = await marker;
  let version: unknown;
  try {
    version =
      bytes && (JSON.parse(Buffer.from(bytes).toString('utf8')) as { layout?: unknown }).layout;
  } catch {
    // Unreadable: a writing open writes it again; a read-only one reads on.
  }
  if (version !== undefined && version !== null && version !== LAYOUT_VERSION) {
    throw new InvalidConfigError(
      `fs adapter: option \`directory\` (${resolved.directory}) holds a Keepsake layout this version cannot read (${String(version)}); point it at another directory or upgrade @keepsake/fs`,
    );
  }
}
