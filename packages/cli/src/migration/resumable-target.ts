import type {
  AppendLogResult,
  Collection,
  DocumentWrite,
  LogDurability,
  LogRecordInput,
  PutResult,
  StorageAdapter,
  WriteOptions,
} from '@keepsake/core';
import { MigrationConflictError } from '../cli-errors.js';
import { sameDocument } from './canonical-document.js';
import { DelegatingAdapter } from './delegating-adapter.js';

/**
 * How a migration treats what the target already holds:
 * - `fresh`: nothing (the target was checked empty; a document found there anyway is
 *   another writer's, and `migrateBackend` stops with AlreadyExistsError);
 * - `resume`: what an interrupted run of the same migration wrote. A document or journal
 *   record equal to the source's is left as it is and counted as copied; one that differs
 *   stops the migration (MigrationConflictError), nothing overwritten;
 * - `force`: like `resume`, but a differing document is first moved to the target's
 *   quarantine (A2: its bytes intact, restorable) and the source's written in its place.
 *   A differing journal record still stops the migration: journals are never replaced.
 */
export type TargetMode = 'fresh' | 'resume' | 'force';

export interface CopyObserver {
  document(collection: Collection, id: string, outcome: 'written' | 'already-there'): void;
  replaced(collection: Collection, id: string, quarantineLocation: string): void;
  journalRecords(count: number): void;
}

/**
 * The target of a migration, as `migrateBackend` sees it. Core's migration never overwrites
 * and never resumes (a document already there is AlreadyExistsError, a journal already
 * started is refused by the sequence check); this wrapper makes each of its writes idempotent
 * when the same data is already in place, so running the same migration again after a crash
 * or a Ctrl-C finishes it instead of failing. It also reports every write, for progress.
 */
export class ResumableTarget extends DelegatingAdapter {
  private readonly source: StorageAdapter;
  private readonly mode: TargetMode;
  private readonly observer: CopyObserver;

  constructor(
    target: StorageAdapter,
    source: StorageAdapter,
    mode: TargetMode,
    observer: CopyObserver,
  ) {
    super(target);
    this.source = source;
    this.mode = mode;
    this.observer = observer;
  }

  override async putDocument(
    collection: Collection,
    id: string,
    write: DocumentWrite,
    options: WriteOptions,
  ): Promise<PutResult> {
    const result = await this.inner.putDocument(collection, id, write, options);
    if (result.ok) {
      this.observer.document(collection, id, 'written');
      return result;
    }
    if (this.mode === 'fresh') return result;
    const [present, original] = await Promise.all([
      this.inner.getDocument(collection, id),
      this.source.getDocument(collection, id),
    ]);
    if (present !== null && original !== null && sameDocument(collection, id, original, present)) {
      this.observer.document(collection, id, 'already-there');
      return { ok: true };
    }
    if (this.mode === 'resume') {
      throw new MigrationConflictError(
        `${collection}/${id}`,
        present === null ? 'it changed while it was read' : `revision ${present.revision}`,
      );
    }
    const location = await this.inner.quarantineDocument(
      collection,
      id,
      "replaced by `keepsake migrate --force` with the source store's document",
    );
    this.observer.replaced(collection, id, location);
    const again = await this.inner.putDocument(collection, id, write, options);
    if (again.ok) this.observer.document(collection, id, 'written');
    return again;
  }

  override async appendLog(
    sessionId: string,
    runId: string,
    records: LogRecordInput[],
    options: { durability: LogDurability },
  ): Promise<AppendLogResult> {
    const result = await this.inner.appendLog(sessionId, runId, records, options);
    if (result.ok) {
      this.observer.journalRecords(records.length);
      return result;
    }
    const first = records[0];
    if (this.mode === 'fresh' || first === undefined) return result;
    const item = `journal ${sessionId}/${runId}`;
    if (result.lastSequence < first.sequence - 1) {
      throw new MigrationConflictError(item, `it ends at sequence ${result.lastSequence}`);
    }
    // What an interrupted run copied: it must be exactly the source's records.
    const copied = records.filter((record) => record.sequence <= result.lastSequence);
    const stored = await this.inner.readLog(sessionId, runId, {
      afterSequence: first.sequence - 1,
      limit: copied.length,
    });
    const present = new Map(stored.records.map((record) => [record.sequence, record.text]));
    for (const record of copied) {
      if (present.get(record.sequence) !== record.text) {
        throw new MigrationConflictError(item, `record ${record.sequence} differs`);
      }
    }
    this.observer.journalRecords(copied.length);
    const rest = records.slice(copied.length);
    if (rest.length === 0) return { ok: true };
    const again = await this.inner.appendLog(sessionId, runId, rest, options);
    if (again.ok) this.observer.journalRecords(rest.length);
    return again;
  }
}
