import { fileURLToPath } from 'node:url';
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
  SessionSummary,
  StorageAdapter,
  StoredDocument,
  WriteOptions,
} from '@keepsake/core';
import type { ClauseId } from '../../src/index.js';
import type { CrashSimulationOptions } from './crash-simulating-memory.js';
import { DelegatingAdapter } from './delegating-adapter.js';

/**
 * The mutant gallery (issue 24): deliberately broken variants of the in-memory reference
 * adapter, each one defect an adapter author could plausibly ship. The conformance suite
 * must fail every one of them (test/mutant-gallery.test.ts); a surviving mutant is a hole
 * in the suite. Each runs only the clauses it breaks, to keep the gallery fast.
 */
export interface Mutant {
  /** Spelled-out name, also the suite name `mutant:<name>`. */
  readonly name: string;
  /** The defect, as the adapter author would have written it. */
  readonly defect: string;
  /** The clauses whose tests run against it (at least one must fail). */
  readonly clauses: readonly ClauseId[];
  /** Whether the initializer simulates a power loss (needed to see durability defects). */
  readonly crashSimulation: boolean;
  /** The module a second real process loads (for the `sharedAcrossProcesses` check). */
  readonly initializerModule?: string;
  /** How the power loss behaves (one write-ahead log for the whole backend, issue 42). */
  readonly simulation?: CrashSimulationOptions;
  wrap(inner: StorageAdapter): StorageAdapter;
}

const everyRecord = { afterSequence: 0, limit: Number.MAX_SAFE_INTEGER };

class NoRevisionCheck extends DelegatingAdapter {
  override async putDocument(
    collection: Collection,
    id: string,
    write: DocumentWrite,
    options: WriteOptions,
  ): Promise<PutResult> {
    const current = await this.inner.getDocument(collection, id);
    const expectedRevision = current?.revision ?? null;
    return this.inner.putDocument(collection, id, write, { ...options, expectedRevision });
  }
}

class ConflictReportedAsDone extends DelegatingAdapter {
  override async putDocument(
    collection: Collection,
    id: string,
    write: DocumentWrite,
    options: WriteOptions,
  ): Promise<PutResult> {
    await this.inner.putDocument(collection, id, write, options);
    return { ok: true };
  }
}

class PrefixIgnored extends DelegatingAdapter {
  override listDocuments(collection: Collection, options: ListDocumentsOptions): Promise<IdPage> {
    return this.inner.listDocuments(collection, { cursor: options.cursor, limit: options.limit });
  }
}

class DurableIgnored extends DelegatingAdapter {
  override putDocument(
    collection: Collection,
    id: string,
    write: DocumentWrite,
    options: WriteOptions,
  ): Promise<PutResult> {
    return this.inner.putDocument(collection, id, write, { ...options, durable: false });
  }
  override deleteDocument(collection: Collection, id: string, options: DeleteOptions) {
    return this.inner.deleteDocument(collection, id, { ...options, durable: false });
  }
  override putIndexEntry(summary: SessionSummary): Promise<void> {
    return this.inner.putIndexEntry(summary, { durable: false });
  }
  override deleteIndexEntry(id: string): Promise<void> {
    return this.inner.deleteIndexEntry(id, { durable: false });
  }
}

class JournalFlushSkipped extends DelegatingAdapter {
  override appendLog(
    sessionId: string,
    runId: string,
    records: LogRecordInput[],
    options: { durability: LogDurability },
  ): Promise<AppendLogResult> {
    const durability = options.durability === 'group' ? 'none' : options.durability;
    return this.inner.appendLog(sessionId, runId, records, { durability });
  }
}

class EveryJournalFlushSkipped extends DelegatingAdapter {
  override appendLog(
    sessionId: string,
    runId: string,
    records: LogRecordInput[],
  ): Promise<AppendLogResult> {
    return this.inner.appendLog(sessionId, runId, records, { durability: 'none' });
  }
}

class SyncDoesNothing extends DelegatingAdapter {
  override async sync(): Promise<void> {}
}

class IndexNeverMissing extends DelegatingAdapter {
  override async listIndex(options: { cursor: string | null; limit: number }): Promise<IndexPage> {
    const page = await this.inner.listIndex(options);
    if (page.status === 'missing') return { status: 'ok', entries: [], nextCursor: null };
    return page;
  }
}

class MissingIndexPatched extends DelegatingAdapter {
  override async putIndexEntry(summary: SessionSummary, options: { durable: boolean }) {
    const page = await this.inner.listIndex({ cursor: null, limit: 1 });
    if (page.status === 'missing') return this.inner.replaceIndex([summary], options);
    return this.inner.putIndexEntry(summary, options);
  }
}

class SharedClaimInProcessOnly extends DelegatingAdapter {
  override get capabilities(): StorageAdapter['capabilities'] {
    return { ...this.inner.capabilities, sharedAcrossProcesses: true };
  }
}

class DeltasDropped extends DelegatingAdapter {
  override async putDocument(
    collection: Collection,
    id: string,
    write: DocumentWrite,
    options: WriteOptions,
  ): Promise<PutResult> {
    if (write.kind !== 'delta') return this.inner.putDocument(collection, id, write, options);
    const stored = await this.inner.getDocument(collection, id);
    if (stored === null) return this.inner.putDocument(collection, id, write, options);
    // Bumps the revision, keeps the old text: the delta's messages are gone.
    return this.inner.putDocument(
      collection,
      id,
      { kind: 'full', revision: write.revision, text: stored.base },
      options,
    );
  }
}

class DeltasNotReturned extends DelegatingAdapter {
  override async getDocument(collection: Collection, id: string): Promise<StoredDocument | null> {
    const stored = await this.inner.getDocument(collection, id);
    return stored === null ? null : { ...stored, deltas: [] };
  }
}

class QuarantineKeepsDocument extends DelegatingAdapter {
  override async quarantineDocument(
    collection: Collection,
    id: string,
    reason: string,
  ): Promise<string> {
    const stored = await this.inner.getDocument(collection, id);
    const location = await this.inner.quarantineDocument(collection, id, reason);
    if (stored !== null) {
      const text = [stored.base, ...stored.deltas].join('\n');
      await this.inner.putDocument(
        collection,
        id,
        { kind: 'full', revision: stored.revision, text },
        { expectedRevision: null, durable: true },
      );
    }
    return location;
  }
}

class QuarantineNotListed extends DelegatingAdapter {
  override async listQuarantined() {
    return [];
  }
}

class JournalSequenceUnchecked extends DelegatingAdapter {
  override async appendLog(
    sessionId: string,
    runId: string,
    records: LogRecordInput[],
    options: { durability: LogDurability },
  ): Promise<AppendLogResult> {
    const stored = await this.inner.readLog(sessionId, runId, everyRecord);
    const last = stored.records.at(-1)?.sequence ?? 0;
    // Renumbers instead of refusing: a stale writer's records land after the live ones.
    const renumbered = records.map((record, index) => ({ ...record, sequence: last + 1 + index }));
    return this.inner.appendLog(sessionId, runId, renumbered, options);
  }
}

class JournalRefusalReportedAsDone extends DelegatingAdapter {
  override async appendLog(
    sessionId: string,
    runId: string,
    records: LogRecordInput[],
    options: { durability: LogDurability },
  ): Promise<AppendLogResult> {
    await this.inner.appendLog(sessionId, runId, records, options);
    return { ok: true };
  }
}

class CaseFoldedIds extends DelegatingAdapter {
  override getDocument(collection: Collection, id: string) {
    return this.inner.getDocument(collection, id.toLowerCase());
  }
  override hasDocument(collection: Collection, id: string) {
    return this.inner.hasDocument(collection, id.toLowerCase());
  }
  override putDocument(
    collection: Collection,
    id: string,
    write: DocumentWrite,
    options: WriteOptions,
  ) {
    return this.inner.putDocument(collection, id.toLowerCase(), write, options);
  }
  override deleteDocument(collection: Collection, id: string, options: DeleteOptions) {
    return this.inner.deleteDocument(collection, id.toLowerCase(), options);
  }
}

class IndexNotWrittenWithDocument extends DelegatingAdapter {
  override putDocument(
    collection: Collection,
    id: string,
    write: DocumentWrite,
    options: WriteOptions,
  ): Promise<PutResult> {
    const { indexEntry: _dropped, ...rest } = options;
    return this.inner.putDocument(collection, id, write, rest);
  }
}

class IndexEntryNeverDeleted extends DelegatingAdapter {
  override async deleteIndexEntry(): Promise<void> {}
}

class IndexRebuildIgnored extends DelegatingAdapter {
  override async replaceIndex(): Promise<void> {}
}

class JournalsKeptOnDelete extends DelegatingAdapter {
  override async deleteLogs(): Promise<void> {}
}

class JournalsNotListed extends DelegatingAdapter {
  override async listLogs(): Promise<string[]> {
    return [];
  }
}

class ReadLogIgnoresAfterSequence extends DelegatingAdapter {
  override readLog(
    sessionId: string,
    runId: string,
    options: { afterSequence: number; limit: number },
  ): Promise<LogReadResult> {
    return this.inner.readLog(sessionId, runId, { ...options, afterSequence: 0 });
  }
}

class AppendKeepsFirstRecordOnly extends DelegatingAdapter {
  override appendLog(
    sessionId: string,
    runId: string,
    records: LogRecordInput[],
    options: { durability: LogDurability },
  ): Promise<AppendLogResult> {
    return this.inner.appendLog(sessionId, runId, records.slice(0, 1), options);
  }
}

class DeleteIgnoresRevision extends DelegatingAdapter {
  override deleteDocument(collection: Collection, id: string, options: DeleteOptions) {
    return this.inner.deleteDocument(collection, id, { durable: options.durable });
  }
}

class HasDocumentAlwaysFalse extends DelegatingAdapter {
  override async hasDocument(): Promise<boolean> {
    return false;
  }
}

class QuarantinedBytesTruncated extends DelegatingAdapter {
  override async readQuarantined(location: string): Promise<string | null> {
    const bytes = await this.inner.readQuarantined?.(location);
    return bytes === null || bytes === undefined ? null : bytes.split('\n')[0]!;
  }
}

class ListingStopsAfterFirstPage extends DelegatingAdapter {
  override async listDocuments(
    collection: Collection,
    options: ListDocumentsOptions,
  ): Promise<IdPage> {
    const page = await this.inner.listDocuments(collection, { ...options, limit: 1 });
    return { ids: page.ids, nextCursor: null };
  }
}

class IndexPagingStopsAfterFirstPage extends DelegatingAdapter {
  override async listIndex(options: { cursor: string | null; limit: number }): Promise<IndexPage> {
    const page = await this.inner.listIndex({ ...options, limit: Math.min(options.limit, 1) });
    return page.status === 'ok' ? { ...page, nextCursor: null } : page;
  }
}

/** A value cut at 64 KiB (a MySQL `TEXT` column, a 16-bit length prefix), silently. */
const cutAt64KiB = (text: string) => (text.length > 65_535 ? text.slice(0, 65_535) : text);

class ValuesOver64KiBTruncated extends DelegatingAdapter {
  override putDocument(
    collection: Collection,
    id: string,
    write: DocumentWrite,
    options: WriteOptions,
  ): Promise<PutResult> {
    return this.inner.putDocument(
      collection,
      id,
      { ...write, text: cutAt64KiB(write.text) },
      options,
    );
  }
  override appendLog(
    sessionId: string,
    runId: string,
    records: LogRecordInput[],
    options: { durability: LogDurability },
  ): Promise<AppendLogResult> {
    const cut = records.map((record) => ({ ...record, text: cutAt64KiB(record.text) }));
    return this.inner.appendLog(sessionId, runId, cut, options);
  }
}

class DeclaredLimitTruncates extends ValuesOver64KiBTruncated {
  override get capabilities(): StorageAdapter['capabilities'] {
    return { ...this.inner.capabilities, maxValueBytes: 65_535 } as StorageAdapter['capabilities'];
  }
}

/** Text through a Latin-1 column: every character above U+00FF keeps only its low byte. */
const throughLatin1 = (text: string) => Buffer.from(text, 'latin1').toString('latin1');

class TextBeyondLatin1Mangled extends DelegatingAdapter {
  override putDocument(
    collection: Collection,
    id: string,
    write: DocumentWrite,
    options: WriteOptions,
  ): Promise<PutResult> {
    const entry = options.indexEntry;
    return this.inner.putDocument(
      collection,
      id,
      { ...write, text: throughLatin1(write.text) },
      entry === undefined
        ? options
        : { ...options, indexEntry: { ...entry, title: throughLatin1(entry.title) } },
    );
  }
  override putIndexEntry(summary: SessionSummary, options: { durable: boolean }) {
    return this.inner.putIndexEntry({ ...summary, title: throughLatin1(summary.title) }, options);
  }
  override appendLog(
    sessionId: string,
    runId: string,
    records: LogRecordInput[],
    options: { durability: LogDurability },
  ): Promise<AppendLogResult> {
    const mangled = records.map((record) => ({ ...record, text: throughLatin1(record.text) }));
    return this.inner.appendLog(sessionId, runId, mangled, options);
  }
}

/**
 * Pages the index by `updatedAt` alone: the next page starts below the last entry's
 * timestamp, so the rest of a run of equal timestamps at the page edge is skipped.
 */
class IndexCursorSkipsTies extends DelegatingAdapter {
  override async listIndex(options: { cursor: string | null; limit: number }): Promise<IndexPage> {
    const first = await this.inner.listIndex({ cursor: null, limit: 100_000 });
    if (first.status !== 'ok') return first;
    const before = options.cursor === null ? Number.POSITIVE_INFINITY : Number(options.cursor);
    const entries = (first.entries as SessionSummary[]).filter((entry) => entry.updatedAt < before);
    const page = entries.slice(0, options.limit);
    const last = page.at(-1);
    const nextCursor =
      entries.length > options.limit && last !== undefined ? String(last.updatedAt) : null;
    return { status: 'ok', entries: page, nextCursor };
  }
}

/** Lets the backend's own error out as it came, untyped: core makes it non-retryable. */
class BackendFaultsAsPlainErrors extends DelegatingAdapter {
  private async untyped<T>(call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      throw new Error(`backend call failed: ${error instanceof Error ? error.message : error}`);
    }
  }
  override getDocument(collection: Collection, id: string): Promise<StoredDocument | null> {
    return this.untyped(() => this.inner.getDocument(collection, id));
  }
  override putDocument(
    collection: Collection,
    id: string,
    write: DocumentWrite,
    options: WriteOptions,
  ): Promise<PutResult> {
    return this.untyped(() => this.inner.putDocument(collection, id, write, options));
  }
}

const mutant = (
  name: string,
  defect: string,
  clauses: readonly ClauseId[],
  wrap: (inner: StorageAdapter) => StorageAdapter,
  crashSimulation = false,
): Mutant => ({ name, defect, clauses, wrap, crashSimulation });

export const MUTANTS: readonly Mutant[] = [
  {
    name: 'shared-claim-in-process-only',
    defect: 'declares sharedAcrossProcesses over storage that lives in one process',
    clauses: ['H1'],
    crashSimulation: false,
    initializerModule: fileURLToPath(new URL('./shared-claim-initializer.ts', import.meta.url)),
    wrap: (inner) => new SharedClaimInProcessOnly(inner),
  },
  mutant(
    'no-revision-check',
    'putDocument ignores expectedRevision',
    ['B4'],
    (inner) => new NoRevisionCheck(inner),
  ),
  mutant(
    'conflict-reported-as-done',
    'a refused putDocument resolves { ok: true }',
    ['B4'],
    (inner) => new ConflictReportedAsDone(inner),
  ),
  mutant(
    'prefix-ignored',
    'listDocuments ignores its prefix',
    ['B5', 'B8'],
    (inner) => new PrefixIgnored(inner),
  ),
  mutant(
    'durable-ignored',
    'every write is made with durable: false',
    ['B3'],
    (inner) => new DurableIgnored(inner),
    true,
  ),
  mutant(
    'group-commit-flush-skipped',
    "appendLog treats 'group' as 'none'",
    ['E2'],
    (inner) => new JournalFlushSkipped(inner),
    true,
  ),
  mutant(
    'journal-never-flushed',
    'appendLog never flushes',
    ['E2'],
    (inner) => new EveryJournalFlushSkipped(inner),
    true,
  ),
  mutant(
    'sync-does-nothing',
    'sync() resolves without flushing',
    ['C1', 'C2'],
    (inner) => new SyncDoesNothing(inner),
    true,
  ),
  mutant(
    'index-never-missing',
    "listIndex reports a lost index as an empty 'ok' page",
    ['B7'],
    (inner) => new IndexNeverMissing(inner),
  ),
  mutant(
    'missing-index-patched',
    'putIndexEntry on a missing index starts a new index holding only that entry',
    ['B7'],
    (inner) => new MissingIndexPatched(inner),
  ),
  mutant(
    'deltas-dropped',
    'a delta write bumps the revision but keeps the old text',
    ['B1', 'C3'],
    (inner) => new DeltasDropped(inner),
  ),
  mutant(
    'deltas-not-returned',
    'getDocument returns the base without its deltas',
    ['B1', 'C3'],
    (inner) => new DeltasNotReturned(inner),
  ),
  mutant(
    'quarantine-keeps-document',
    'quarantineDocument copies aside but leaves the document',
    ['A2'],
    (inner) => new QuarantineKeepsDocument(inner),
  ),
  mutant(
    'quarantine-not-listed',
    'listQuarantined is always empty',
    ['A2'],
    (inner) => new QuarantineNotListed(inner),
  ),
  mutant(
    'quarantined-bytes-truncated',
    'readQuarantined returns only the base',
    ['A2'],
    (inner) => new QuarantinedBytesTruncated(inner),
  ),
  mutant(
    'journal-sequence-unchecked',
    'appendLog renumbers instead of refusing a non-next sequence',
    ['E3', 'D4'],
    (inner) => new JournalSequenceUnchecked(inner),
  ),
  mutant(
    'journal-refusal-reported-as-done',
    'a refused appendLog resolves { ok: true }',
    ['E3', 'D4'],
    (inner) => new JournalRefusalReportedAsDone(inner),
  ),
  mutant(
    'append-keeps-first-record-only',
    'appendLog stores only the first record of a batch',
    ['E2'],
    (inner) => new AppendKeepsFirstRecordOnly(inner),
  ),
  mutant(
    'read-log-ignores-after-sequence',
    'readLog always starts at the first record',
    ['E2', 'F1'],
    (inner) => new ReadLogIgnoresAfterSequence(inner),
  ),
  mutant(
    'journals-not-listed',
    'listLogs is always empty',
    ['H3', 'F1'],
    (inner) => new JournalsNotListed(inner),
  ),
  mutant(
    'journals-kept-on-delete',
    'deleteLogs does nothing',
    ['B8'],
    (inner) => new JournalsKeptOnDelete(inner),
  ),
  mutant(
    'case-folded-ids',
    'document ids are lower-cased',
    ['A1'],
    (inner) => new CaseFoldedIds(inner),
  ),
  mutant(
    'index-not-written-with-document',
    'putDocument drops indexEntry',
    ['B7'],
    (inner) => new IndexNotWrittenWithDocument(inner),
  ),
  mutant(
    'index-entry-never-deleted',
    'deleteIndexEntry does nothing',
    ['B8'],
    (inner) => new IndexEntryNeverDeleted(inner),
  ),
  mutant(
    'index-rebuild-ignored',
    'replaceIndex does nothing',
    ['B7'],
    (inner) => new IndexRebuildIgnored(inner),
  ),
  mutant(
    'delete-ignores-revision',
    'deleteDocument ignores expectedRevision',
    ['B8', 'B4'],
    (inner) => new DeleteIgnoresRevision(inner),
  ),
  mutant(
    'has-document-always-false',
    'hasDocument always answers false',
    ['B8', 'E2'],
    (inner) => new HasDocumentAlwaysFalse(inner),
  ),
  mutant(
    'listing-stops-after-first-page',
    'listDocuments returns one page and no cursor',
    ['B5', 'B7'],
    (inner) => new ListingStopsAfterFirstPage(inner),
  ),
  mutant(
    'values-over-64k-truncated',
    'documents, deltas and journal records are cut at 64 KiB (a TEXT column)',
    ['A3'],
    (inner) => new ValuesOver64KiBTruncated(inner),
  ),
  mutant(
    'declared-limit-truncates',
    'declares maxValueBytes 65535 but cuts longer values instead of refusing them',
    ['A3'],
    (inner) => new DeclaredLimitTruncates(inner),
  ),
  mutant(
    'text-beyond-latin1-mangled',
    'text is stored as Latin-1: characters above U+00FF keep their low byte',
    ['B1', 'E2'],
    (inner) => new TextBeyondLatin1Mangled(inner),
  ),
  mutant(
    'index-cursor-skips-ties',
    "listIndex's cursor is the last entry's updatedAt: the rest of a tie at a page edge is skipped",
    ['B7'],
    (inner) => new IndexCursorSkipsTies(inner),
  ),
  mutant(
    'backend-faults-as-plain-errors',
    "a backend's failure is thrown as a plain Error (core makes it non-retryable), EIO included",
    ['B2'],
    (inner) => new BackendFaultsAsPlainErrors(inner),
  ),
  {
    name: 'sync-does-nothing-on-a-single-log',
    defect:
      'sync() resolves without flushing, on a backend where every durable write also makes the writes before it durable (SQLite WAL)',
    clauses: ['C1', 'C2'],
    crashSimulation: true,
    simulation: { singleLog: true },
    wrap: (inner) => new SyncDoesNothing(inner),
  },
  mutant(
    'index-paging-stops-after-first-page',
    'listIndex returns one page and no cursor',
    ['B7'],
    (inner) => new IndexPagingStopsAfterFirstPage(inner),
  ),
];
