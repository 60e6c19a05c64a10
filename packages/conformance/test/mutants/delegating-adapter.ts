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
  StorageAdapter,
  StoredDocument,
  WriteOptions,
} from '@keepsake/core';

/**
 * An adapter that forwards every primitive to `inner`. The crash simulator and each mutant
 * of the gallery extend it and override the one or two primitives they change, so what a
 * mutant breaks is visible at a glance.
 */
export class DelegatingAdapter implements StorageAdapter {
  readonly specificationVersion = 'v1' as const;

  /** E9: the inner adapter's push of appends, when it has one (absent otherwise). */
  declare readonly watchLog?: NonNullable<StorageAdapter['watchLog']>;
  /** F1: the inner adapter's liveness, when it has one. */
  declare readonly liveness?: NonNullable<StorageAdapter['liveness']>;

  constructor(readonly inner: StorageAdapter) {
    if (inner.liveness !== undefined) this.liveness = inner.liveness;
    const watchLog = inner.watchLog;
    if (typeof watchLog === 'function') {
      this.watchLog = (sessionId, runId, onAppend) =>
        watchLog.call(inner, sessionId, runId, onAppend);
    }
  }

  get name(): string {
    return this.inner.name;
  }
  get capabilities(): StorageAdapter['capabilities'] {
    return this.inner.capabilities;
  }
  open(): Promise<void> {
    return this.inner.open();
  }
  getDocument(collection: Collection, id: string): Promise<StoredDocument | null> {
    return this.inner.getDocument(collection, id);
  }
  hasDocument(collection: Collection, id: string): Promise<boolean> {
    return this.inner.hasDocument(collection, id);
  }
  putDocument(
    collection: Collection,
    id: string,
    write: DocumentWrite,
    options: WriteOptions,
  ): Promise<PutResult> {
    return this.inner.putDocument(collection, id, write, options);
  }
  deleteDocument(collection: Collection, id: string, options: DeleteOptions): Promise<PutResult> {
    return this.inner.deleteDocument(collection, id, options);
  }
  listDocuments(collection: Collection, options: ListDocumentsOptions): Promise<IdPage> {
    return this.inner.listDocuments(collection, options);
  }
  quarantineDocument(collection: Collection, id: string, reason: string): Promise<string> {
    return this.inner.quarantineDocument(collection, id, reason);
  }
  listQuarantined(): Promise<QuarantinedDocument[]> {
    return this.inner.listQuarantined();
  }
  readQuarantined(location: string): Promise<string | null> {
    return this.inner.readQuarantined?.(location) ?? Promise.resolve(null);
  }
  putIndexEntry(summary: SessionSummary, options: { durable: boolean }): Promise<void> {
    return this.inner.putIndexEntry(summary, options);
  }
  deleteIndexEntry(id: string, options: { durable: boolean }): Promise<void> {
    return this.inner.deleteIndexEntry(id, options);
  }
  replaceIndex(summaries: SessionSummary[], options: { durable: boolean }): Promise<void> {
    return this.inner.replaceIndex(summaries, options);
  }
  listIndex(options: { cursor: string | null; limit: number }): Promise<IndexPage> {
    return this.inner.listIndex(options);
  }
  appendLog(
    sessionId: string,
    runId: string,
    records: LogRecordInput[],
    options: { durability: LogDurability },
  ): Promise<AppendLogResult> {
    return this.inner.appendLog(sessionId, runId, records, options);
  }
  readLog(
    sessionId: string,
    runId: string,
    options: { afterSequence: number; limit: number },
  ): Promise<LogReadResult> {
    return this.inner.readLog(sessionId, runId, options);
  }
  listLogs(sessionId: string): Promise<string[]> {
    return this.inner.listLogs(sessionId);
  }
  deleteLogs(sessionId: string, options: { durable: boolean }): Promise<void> {
    return this.inner.deleteLogs(sessionId, options);
  }
  deleteLog(sessionId: string, runId: string, options: { durable: boolean }): Promise<void> {
    return this.inner.deleteLog(sessionId, runId, options);
  }
  sync(): Promise<void> {
    return this.inner.sync();
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}
