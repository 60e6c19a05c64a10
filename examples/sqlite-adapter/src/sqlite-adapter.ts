import { DatabaseSync, type SQLInputValue } from 'node:sqlite';
import {
  type AdapterCapabilities,
  type AppendLogResult,
  assertCollection,
  assertDocumentId,
  BackendError,
  type Collection,
  type DeleteOptions,
  type DocumentWrite,
  type IdPage,
  type IndexPage,
  type ListDocumentsOptions,
  type LogDurability,
  type LogReadResult,
  type LogRecordInput,
  type PutResult,
  type QuarantinedDocument,
  type SessionSummary,
  type StorageAdapterV1,
  type StoredDocument,
  type WriteOptions,
} from '@keepsake/core';
import { createSchema } from './schema.js';

export interface SqliteAdapterOptions {
  /** The database file. Adapters (and processes) opening the same file share the data. */
  file: string;
  /**
   * Called after every commit that was made durable, with the open database. The
   * conformance initializer snapshots the file there to simulate a power loss; an
   * application leaves it out.
   */
  afterDurableCommit?: (database: DatabaseSync) => void;
}

/**
 * What this adapter promises (H1). WAL with `synchronous=NORMAL`: a commit is on disk when
 * the WAL is synced, which a `durable` write forces by committing with `synchronous=FULL`
 * (that sync also covers every commit before it).
 */
export const sqliteAdapterCapabilities: AdapterCapabilities & { readonly maxValueBytes: number } = {
  durability: 'fsync',
  // A3: SQLite's SQLITE_MAX_LENGTH (a TEXT value of up to a billion bytes, by default).
  maxValueBytes: 1_000_000_000,
  // BEGIN IMMEDIATE takes SQLite's write lock, in this process and in others.
  conditionalWrites: true,
  sharedAcrossProcesses: true,
  appendDeltas: true,
  nativeAppend: true,
  groupCommit: false,
  clusterSafeKeys: false,
  indexWithDocument: true,
  gaps: [],
};

const NAME = 'sqlite';

export function sqliteAdapter(options: SqliteAdapterOptions): StorageAdapterV1 {
  return new SqliteAdapter(options);
}

class SqliteAdapter implements StorageAdapterV1 {
  readonly specificationVersion = 'v1' as const;
  readonly name = NAME;
  readonly capabilities = sqliteAdapterCapabilities;
  private database: DatabaseSync | null = null;
  private closed = false;

  constructor(private readonly options: SqliteAdapterOptions) {}

  async open(): Promise<void> {
    this.run('open the database', (database) => {
      createSchema(database);
      // A database without sessions starts an empty (complete) index; one with sessions and
      // no index reports it missing, and core rebuilds it.
      const hasIndex = database.prepare('SELECT 1 FROM index_state').get() !== undefined;
      const hasSessions =
        database.prepare("SELECT 1 FROM documents WHERE collection = 'sessions' LIMIT 1").get() !==
        undefined;
      if (!hasIndex && !hasSessions) database.exec('INSERT OR IGNORE INTO index_state VALUES (1)');
    });
  }

  /** Opens the connection on first use; every SQLite failure becomes a typed BackendError. */
  private run<T>(operation: string, body: (database: DatabaseSync) => T): T {
    if (this.closed) throw new BackendError(NAME, `${operation} (adapter closed)`);
    try {
      if (this.database === null) {
        const database = new DatabaseSync(this.options.file);
        database.exec(
          'PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 10000;',
        );
        createSchema(database);
        this.database = database;
      }
      return body(this.database);
    } catch (cause) {
      if (BackendError.isInstance(cause)) throw cause;
      throw new BackendError(NAME, operation, { cause });
    }
  }

  /**
   * One write transaction. SQLite runs it synchronously, so nothing of this process slips
   * in between; BEGIN IMMEDIATE keeps other processes out until COMMIT.
   */
  private transaction<T>(
    operation: string,
    durable: boolean,
    body: (database: DatabaseSync) => T,
  ): T {
    return this.run(operation, (database) => {
      if (durable) database.exec('PRAGMA synchronous = FULL');
      database.exec('BEGIN IMMEDIATE');
      let result: T;
      try {
        result = body(database);
        database.exec('COMMIT');
      } catch (error) {
        database.exec('ROLLBACK');
        throw error;
      } finally {
        if (durable) database.exec('PRAGMA synchronous = NORMAL');
      }
      if (durable) this.options.afterDurableCommit?.(database);
      return result;
    });
  }

  private revisionOf(database: DatabaseSync, collection: Collection, id: string): number | null {
    const row = database
      .prepare('SELECT revision FROM documents WHERE collection = ? AND id = ?')
      .get(collection, id) as { revision: number } | undefined;
    return row?.revision ?? null;
  }

  async getDocument(collection: Collection, id: string): Promise<StoredDocument | null> {
    assertDocumentId(collection, id);
    return this.run('read a document', (database) => {
      const row = database
        .prepare('SELECT revision, base FROM documents WHERE collection = ? AND id = ?')
        .get(collection, id) as { revision: number; base: string } | undefined;
      if (row === undefined) return null;
      const deltas = database
        .prepare(
          'SELECT text FROM document_deltas WHERE collection = ? AND id = ? ORDER BY position',
        )
        .all(collection, id) as Array<{ text: string }>;
      return { revision: row.revision, base: row.base, deltas: deltas.map((delta) => delta.text) };
    });
  }

  async hasDocument(collection: Collection, id: string): Promise<boolean> {
    assertDocumentId(collection, id);
    return this.run(
      'read a document',
      (database) => this.revisionOf(database, collection, id) !== null,
    );
  }

  async putDocument(
    collection: Collection,
    id: string,
    write: DocumentWrite,
    options: WriteOptions,
  ): Promise<PutResult> {
    assertDocumentId(collection, id);
    return this.transaction('write a document', options.durable, (database): PutResult => {
      const currentRevision = this.revisionOf(database, collection, id);
      if (currentRevision !== options.expectedRevision) return { ok: false, currentRevision };
      if (write.kind === 'delta') {
        if (currentRevision === null) return { ok: false, currentRevision };
        database
          .prepare(
            `INSERT INTO document_deltas SELECT ?, ?, coalesce(max(position), 0) + 1, ?
             FROM document_deltas WHERE collection = ? AND id = ?`,
          )
          .run(collection, id, write.text, collection, id);
        database
          .prepare('UPDATE documents SET revision = ? WHERE collection = ? AND id = ?')
          .run(write.revision, collection, id);
      } else {
        database
          .prepare('DELETE FROM document_deltas WHERE collection = ? AND id = ?')
          .run(collection, id);
        database
          .prepare('INSERT OR REPLACE INTO documents VALUES (?, ?, ?, ?)')
          .run(collection, id, write.revision, write.text);
      }
      if (options.indexEntry !== undefined && collection === 'sessions') {
        putEntry(database, options.indexEntry);
      }
      return { ok: true };
    });
  }

  async deleteDocument(
    collection: Collection,
    id: string,
    options: DeleteOptions,
  ): Promise<PutResult> {
    assertDocumentId(collection, id);
    return this.transaction('delete a document', options.durable, (database): PutResult => {
      const currentRevision = this.revisionOf(database, collection, id);
      if (options.expectedRevision !== undefined && currentRevision !== options.expectedRevision) {
        return { ok: false, currentRevision };
      }
      deleteDocumentRows(database, collection, id);
      return { ok: true };
    });
  }

  async listDocuments(collection: Collection, options: ListDocumentsOptions): Promise<IdPage> {
    assertCollection(collection);
    return this.run('list documents', (database) => {
      const prefix = options.prefix ?? '';
      const rows = database
        .prepare(
          `SELECT id FROM documents WHERE collection = ? AND substr(id, 1, ?) = ? AND id > ?
           ORDER BY id LIMIT ?`,
        )
        .all(collection, prefix.length, prefix, options.cursor ?? '', options.limit + 1) as Array<{
        id: string;
      }>;
      const ids = rows.slice(0, options.limit).map((row) => row.id);
      return { ids, nextCursor: rows.length > options.limit ? (ids.at(-1) ?? null) : null };
    });
  }

  async quarantineDocument(collection: Collection, id: string, reason: string): Promise<string> {
    assertDocumentId(collection, id);
    const stored = await this.getDocument(collection, id);
    return this.transaction('quarantine a document', true, (database) => {
      const count = database.prepare('SELECT count(*) AS n FROM quarantine').get() as { n: number };
      const location = `sqlite://quarantine/${collection}/${id}/${count.n + 1}`;
      const bytes = stored === null ? null : [stored.base, ...stored.deltas].join('\n');
      database
        .prepare('INSERT INTO quarantine VALUES (?, ?, ?, ?, ?, ?)')
        .run(location, collection, id, reason, Date.now(), bytes);
      deleteDocumentRows(database, collection, id);
      return location;
    });
  }

  async listQuarantined(): Promise<QuarantinedDocument[]> {
    return this.run('list quarantined documents', (database) => {
      const rows = database
        .prepare('SELECT location, collection, id, reason, quarantined_at FROM quarantine')
        .all() as Array<{
        location: string;
        collection: Collection;
        id: string;
        reason: string;
        quarantined_at: number;
      }>;
      return rows.map((row) => ({
        location: row.location,
        collection: row.collection,
        id: row.id,
        reason: row.reason,
        quarantinedAt: row.quarantined_at,
      }));
    });
  }

  async readQuarantined(location: string): Promise<string | null> {
    return this.run('read a quarantined document', (database) => {
      const row = database
        .prepare('SELECT bytes FROM quarantine WHERE location = ?')
        .get(location) as { bytes: string | null } | undefined;
      return row?.bytes ?? null;
    });
  }

  async putIndexEntry(summary: SessionSummary, options: { durable: boolean }): Promise<void> {
    this.transaction('write the index', options.durable, (database) => putEntry(database, summary));
  }

  async deleteIndexEntry(id: string, options: { durable: boolean }): Promise<void> {
    this.transaction('write the index', options.durable, (database) => {
      database.prepare('DELETE FROM index_entries WHERE id = ?').run(id);
    });
  }

  async replaceIndex(summaries: SessionSummary[], options: { durable: boolean }): Promise<void> {
    this.transaction('rebuild the index', options.durable, (database) => {
      database.exec('DELETE FROM index_entries; INSERT OR IGNORE INTO index_state VALUES (1);');
      for (const summary of summaries) putEntry(database, summary);
    });
  }

  async listIndex(options: { cursor: string | null; limit: number }): Promise<IndexPage> {
    return this.run('read the index', (database): IndexPage => {
      if (database.prepare('SELECT 1 FROM index_state').get() === undefined) {
        return { status: 'missing' };
      }
      const [updatedAtText, cursorId] = (options.cursor ?? '').split(':');
      const after: SQLInputValue[] =
        options.cursor === null
          ? [Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER, '']
          : [Number(updatedAtText), Number(updatedAtText), cursorId ?? ''];
      const rows = database
        .prepare(
          `SELECT id, updated_at, summary FROM index_entries
           WHERE updated_at < ? OR (updated_at = ? AND id > ?)
           ORDER BY updated_at DESC, id ASC LIMIT ?`,
        )
        .all(...after, options.limit + 1) as Array<{
        id: string;
        updated_at: number;
        summary: string;
      }>;
      const page = rows.slice(0, options.limit);
      const last = page.at(-1);
      let entries: unknown[];
      try {
        entries = page.map((row) => JSON.parse(row.summary) as unknown);
      } catch (error) {
        return { status: 'corrupt', reason: String(error) };
      }
      const nextCursor =
        rows.length > options.limit && last !== undefined ? `${last.updated_at}:${last.id}` : null;
      return { status: 'ok', entries, nextCursor };
    });
  }

  async appendLog(
    sessionId: string,
    runId: string,
    records: LogRecordInput[],
    options: { durability: LogDurability },
  ): Promise<AppendLogResult> {
    const first = records[0];
    if (first === undefined) return { ok: true };
    return this.transaction('append to a journal', options.durability !== 'none', (database) => {
      const row = database
        .prepare(
          'SELECT coalesce(max(sequence), 0) AS last FROM journal_records WHERE session_id = ? AND run_id = ?',
        )
        .get(sessionId, runId) as { last: number };
      if (first.sequence !== row.last + 1) return { ok: false, lastSequence: row.last };
      const insert = database.prepare('INSERT INTO journal_records VALUES (?, ?, ?, ?)');
      for (const record of records) insert.run(sessionId, runId, record.sequence, record.text);
      return { ok: true } as const;
    });
  }

  async readLog(
    sessionId: string,
    runId: string,
    options: { afterSequence: number; limit: number },
  ): Promise<LogReadResult> {
    return this.run('read a journal', (database) => {
      const exists =
        database
          .prepare('SELECT 1 FROM journal_records WHERE session_id = ? AND run_id = ? LIMIT 1')
          .get(sessionId, runId) !== undefined;
      const records = database
        .prepare(
          `SELECT sequence, text FROM journal_records
           WHERE session_id = ? AND run_id = ? AND sequence > ? ORDER BY sequence LIMIT ?`,
        )
        .all(sessionId, runId, options.afterSequence, options.limit) as Array<{
        sequence: number;
        text: string;
      }>;
      return {
        exists,
        records: records.map((record) => ({ sequence: record.sequence, text: record.text })),
        tornTail: false,
      };
    });
  }

  async listLogs(sessionId: string): Promise<string[]> {
    return this.run('list journals', (database) => {
      const rows = database
        .prepare('SELECT DISTINCT run_id FROM journal_records WHERE session_id = ?')
        .all(sessionId) as Array<{ run_id: string }>;
      return rows.map((row) => row.run_id);
    });
  }

  async deleteLogs(sessionId: string, options: { durable: boolean }): Promise<void> {
    this.transaction('delete journals', options.durable, (database) => {
      database.prepare('DELETE FROM journal_records WHERE session_id = ?').run(sessionId);
    });
  }

  async deleteLog(sessionId: string, runId: string, options: { durable: boolean }): Promise<void> {
    this.transaction('delete a journal', options.durable, (database) => {
      database
        .prepare('DELETE FROM journal_records WHERE session_id = ? AND run_id = ?')
        .run(sessionId, runId);
    });
  }

  /**
   * C1: a checkpoint syncs the WAL (and with it every commit so far) before it copies the WAL
   * into the database file, then syncs that file. An empty transaction would not do: a commit
   * that wrote nothing writes no WAL frame, so even with `synchronous=FULL` nothing is synced.
   */
  async sync(): Promise<void> {
    this.run('sync', (database) => {
      database.exec('PRAGMA wal_checkpoint(FULL)');
      this.options.afterDurableCommit?.(database);
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const database = this.database;
    this.database = null;
    try {
      database?.close();
    } catch (cause) {
      throw new BackendError(NAME, 'close the database', { cause });
    }
  }
}

/** Writes one index entry, unless the index is missing (B7: it is rebuilt, never patched). */
function putEntry(database: DatabaseSync, summary: SessionSummary): void {
  if (database.prepare('SELECT 1 FROM index_state').get() === undefined) return;
  database
    .prepare('INSERT OR REPLACE INTO index_entries VALUES (?, ?, ?)')
    .run(summary.id, summary.updatedAt, JSON.stringify(summary));
}

function deleteDocumentRows(database: DatabaseSync, collection: Collection, id: string): void {
  database
    .prepare('DELETE FROM document_deltas WHERE collection = ? AND id = ?')
    .run(collection, id);
  database.prepare('DELETE FROM documents WHERE collection = ? AND id = ?').run(collection, id);
}
