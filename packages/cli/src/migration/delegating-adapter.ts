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
 * An adapter that hands every call to another one. The migration's wrappers extend it and
 * change the one or two calls they are about, so core's `migrateBackend` runs unchanged on
 * top of them. The adapter handed in is open already (the CLI opens every backend itself, to
 * report a failure to reach it before any work starts), so `open()` is not passed on:
 * `migrateBackend` opens both of its ends again, and an adapter is opened once.
 */
export class DelegatingAdapter implements StorageAdapter {
  readonly specificationVersion = 'v1' as const;

  protected readonly inner: StorageAdapter;

  constructor(inner: StorageAdapter) {
    this.inner = inner;
  }

  get name(): string {
    return this.inner.name;
  }

  get capabilities(): StorageAdapter['capabilities'] {
    return this.inner.capabilities;
  }

  async open(): Promise<void> {}

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
