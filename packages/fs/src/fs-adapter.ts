import type {
  AppendLogResult,
  Collection,
  DeleteOptions,
  DocumentWrite,
  IdPage,
  IndexPage,
  ListDocumentsOptions,
  LogDurability,
  LogReadResult,
  LogRecordInput,
  PutResult,
  QuarantinedDocument,
  SessionSummary,
  StorageAdapterV1,
  StoredDocument,
  WriteOptions,
} from '@keepsake/core';
import { assertValidId, BackendError, InvalidConfigError } from '@keepsake/core';
import { writeFileAtomic } from './atomic-write.js';
import { type AdapterContext, createAdapterContext, makeDirectory } from './context.js';
import { DocumentStore } from './document-store.js';
import { ADAPTER_NAME, backendCall, toBackendError } from './errors.js';
import { fsCapabilities } from './fs-capabilities.js';
import { GroupCommitLog } from './group-commit-log.js';
import { IndexStore } from './index-store.js';
import { putDocumentWithIndexEntry } from './index-with-document.js';
import { JournalStore } from './journal-store.js';
import { watchJournal } from './journal-watch.js';
import { LAYOUT_VERSION } from './layout.js';
import { replayDeadLogs } from './log-replay.js';
import { type FsAdapterOptions, resolveOptions } from './options.js';
import { OwnerLiveness } from './owner-liveness.js';
import { QuarantineStore } from './quarantine.js';
import { readOnlyFsAdapter } from './read-only-adapter.js';
import { sweepLeftovers } from './sweep.js';

export { fsCapabilities } from './fs-capabilities.js';

/**
 * The local filesystem adapter: Keepsake's embedded default backend. See the package README
 * for the layout under `directory` and for what each write does on disk.
 */
export function fsAdapter(options: FsAdapterOptions): StorageAdapterV1 {
  const resolved = resolveOptions(options);
  // For inspection: an open and reads that write nothing (read-only-adapter.ts).
  if (resolved.readOnly) return readOnlyFsAdapter(resolved);
  const context = createAdapterContext(resolved);
  const { fileSystem, layout, durability, segments } = context;
  const documents = new DocumentStore(context);
  const index = new IndexStore(context);
  const groupCommitLog = new GroupCommitLog(context);
  const journals = new JournalStore(context, groupCommitLog);
  const quarantine = new QuarantineStore(context);
  const liveness = new OwnerLiveness(fileSystem);
  let closed = false;
  let closing: Promise<void> | null = null;
  /**
   * Calls begun and not yet settled: close() waits for them, so a write that began before it
   * cannot take a lock (and keep a file open) after close() has let go of every lock.
   */
  const inFlight = new Set<Promise<void>>();

  /** Every call: refused once closed, and any untyped failure becomes a BackendError. */
  function call<T>(operation: string, action: () => Promise<T>): Promise<T> {
    if (closed) return Promise.reject(closedError(operation));
    // Tracked by a promise of its own, not by a handler on the result: a caller that drops a
    // rejected call still hears of it (an unhandled rejection), as without this bookkeeping.
    let ended!: () => void;
    const done = new Promise<void>((resolve) => {
      ended = resolve;
    });
    inFlight.add(done);
    return backendCall(operation, async () => {
      try {
        return await action();
      } finally {
        inFlight.delete(done);
        ended();
      }
    });
  }

  function closedError(operation: string): BackendError {
    return new BackendError(ADAPTER_NAME, `${operation}: the adapter is closed`);
  }

  return {
    specificationVersion: 'v1',
    name: ADAPTER_NAME,
    capabilities: fsCapabilities,
    liveness,

    open: () =>
      call('open', async () => {
        await liveness.learnBoot();
        // A2: a root that cannot be made is a typed error naming the option that set it.
        await makeDirectory(
          fileSystem,
          layout.root,
          `create the store directory ${layout.root} (option \`directory\`)`,
        );
        for (const directory of layout.fixedDirectories) {
          await makeDirectory(fileSystem, directory);
        }
        segments.setLocalDisk((await fileSystem.isLocalDisk?.(layout.root)) ?? false);
        await checkLayoutMarker(context);
        await replayDeadLogs(context);
        await sweepLeftovers(context);
        await index.initializeIfFresh();
      }),

    getDocument: (collection: Collection, id: string): Promise<StoredDocument | null> =>
      call(`read ${collection}/${id}`, () => documents.get(collection, id)),
    hasDocument: (collection: Collection, id: string): Promise<boolean> =>
      call(`check ${collection}/${id}`, () => documents.has(collection, id)),
    putDocument: (
      collection: Collection,
      id: string,
      write: DocumentWrite,
      writeOptions: WriteOptions,
    ): Promise<PutResult> =>
      call(`write ${collection}/${id}`, () =>
        putDocumentWithIndexEntry(documents, index, collection, id, write, writeOptions),
      ),
    deleteDocument: (
      collection: Collection,
      id: string,
      deleteOptions: DeleteOptions,
    ): Promise<PutResult> =>
      call(`delete ${collection}/${id}`, () => documents.delete(collection, id, deleteOptions)),
    listDocuments: (collection: Collection, listOptions: ListDocumentsOptions): Promise<IdPage> =>
      call(`list ${collection}`, () => documents.list(collection, listOptions)),
    quarantineDocument: (collection: Collection, id: string, reason: string): Promise<string> =>
      call(`quarantine ${collection}/${id}`, () => quarantine.quarantine(collection, id, reason)),
    listQuarantined: (): Promise<QuarantinedDocument[]> =>
      call('list quarantine', () => quarantine.list()),
    readQuarantined: (location: string): Promise<string | null> =>
      call('read quarantined bytes', () => quarantine.read(location)),

    putIndexEntry: (summary: SessionSummary, indexOptions: { durable: boolean }) =>
      call('write the index', () => index.put(summary, indexOptions.durable)),
    deleteIndexEntry: (id: string, indexOptions: { durable: boolean }) =>
      call('write the index', () => index.delete(id, indexOptions.durable)),
    replaceIndex: (summaries: SessionSummary[], indexOptions: { durable: boolean }) =>
      call('replace the index', () => index.replace(summaries, indexOptions.durable)),
    listIndex: (listOptions: { cursor: string | null; limit: number }): Promise<IndexPage> =>
      call('read the index', () => index.list(listOptions.cursor, listOptions.limit)),

    appendLog: (
      sessionId: string,
      runId: string,
      records: LogRecordInput[],
      logOptions: { durability: LogDurability },
    ): Promise<AppendLogResult> => {
      // Every streamed event comes this way, so not through `call` and its async wrapper:
      // the journal store rejects only with typed errors; what it throws is typed here.
      const operation = () => `append to journal ${sessionId}/${runId}`;
      if (closed) return Promise.reject(closedError(operation()));
      try {
        return journals.append(sessionId, runId, records, logOptions.durability);
      } catch (error) {
        return Promise.reject(toBackendError(error, operation()));
      }
    },
    readLog: (
      sessionId: string,
      runId: string,
      readOptions: { afterSequence: number; limit: number },
    ): Promise<LogReadResult> =>
      call(`read journal ${sessionId}/${runId}`, () =>
        journals.read(sessionId, runId, readOptions.afterSequence, readOptions.limit),
      ),
    // E9: another process's appends wake this one's followers, on a local disk only (a
    // network filesystem's notifications do not cover other hosts' writes): elsewhere, and
    // on a file system that cannot watch, null leaves followers to their usual poll.
    watchLog: (sessionId: string, runId: string, onAppend: () => void): (() => void) | null => {
      if (closed || !segments.onLocalDisk) return null;
      assertValidId(sessionId);
      assertValidId(runId, 'run');
      return watchJournal(fileSystem, layout, sessionId, runId, onAppend);
    },
    listLogs: (sessionId: string): Promise<string[]> =>
      call(`list journals of ${sessionId}`, () => journals.list(sessionId)),
    deleteLogs: (sessionId: string, deleteOptions: { durable: boolean }): Promise<void> =>
      call(`delete journals of ${sessionId}`, () =>
        journals.deleteAll(sessionId, deleteOptions.durable),
      ),
    deleteLog: (
      sessionId: string,
      runId: string,
      deleteOptions: { durable: boolean },
    ): Promise<void> =>
      call(`delete journal ${sessionId}/${runId}`, () =>
        journals.deleteOne(sessionId, runId, deleteOptions.durable),
      ),

    sync: () =>
      call('sync', async () => {
        await journals.drain();
        await groupCommitLog.checkpoint();
        await durability.syncDirty(resolved.syncConcurrency);
      }),
    // One close for every caller: a second close() resolves (or fails) with the first, never
    // while the first is still waiting for calls in flight with locks held.
    close: () => {
      closing ??= closeOnce();
      return closing;
    },
  };

  async function closeOnce(): Promise<void> {
    closed = true;
    liveness.release();
    // Their outcomes go to their callers; close() only waits for them to end.
    await Promise.allSettled([...inFlight]);
    // Every journal is let go and the log closed even when a journal write failed (the
    // log is then kept on disk for replay, and close reports the failure).
    const drainFailure = await journals.drain().then(
      () => null,
      (error: unknown) => ({ error }),
    );
    await backendCall('close', () => context.locks.dropAllLeases());
    await backendCall('close', () => groupCommitLog.close());
    if (drainFailure !== null) await backendCall('close', () => Promise.reject(drainFailure.error));
  }
}

/** A directory written by a later layout is refused rather than misread. */
async function checkLayoutMarker(context: AdapterContext): Promise<void> {
  const { layout, segments, fileSystem } = context;
  const bytes = await segments.readOptional(layout.marker);
  let version: unknown;
  try {
    version =
      bytes && (JSON.parse(Buffer.from(bytes).toString('utf8')) as { layout?: unknown }).layout;
  } catch {
    // Unreadable (a marker whose unsynced bytes a power loss dropped): written again below.
  }
  if (version === undefined || version === null) {
    const marker = `${JSON.stringify({ keepsake: 'fs', layout: LAYOUT_VERSION })}\n`;
    await writeFileAtomic(fileSystem, layout.marker, Buffer.from(marker), {
      durable: false,
      retrySharingViolations: context.options.retrySharingViolations,
    });
    return;
  }
  if (version !== LAYOUT_VERSION) {
    throw new InvalidConfigError(
      `fs adapter: option \`directory\` (${layout.root}) holds a Keepsake layout this version cannot read (${String(version)}); point it at another directory or upgrade @keepsake/fs`,
    );
  }
}
