import type { DatabaseSync } from 'node:sqlite';

/**
 * The tables. Documents keep their base and their deltas apart, so a delta write is one
 * INSERT (appendDeltas). The index is "missing" when `index_state` has no row: a lost
 * index is rebuilt by core from the documents, never patched by single entries (B7).
 */
export function createSchema(database: DatabaseSync): void {
  database.exec(`
    CREATE TABLE IF NOT EXISTS documents (
      collection TEXT NOT NULL, id TEXT NOT NULL, revision INTEGER NOT NULL, base TEXT NOT NULL,
      PRIMARY KEY (collection, id)
    ) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS document_deltas (
      collection TEXT NOT NULL, id TEXT NOT NULL, position INTEGER NOT NULL, text TEXT NOT NULL,
      PRIMARY KEY (collection, id, position)
    ) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS index_state (present INTEGER PRIMARY KEY);
    CREATE TABLE IF NOT EXISTS index_entries (
      id TEXT PRIMARY KEY, updated_at INTEGER NOT NULL, summary TEXT NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS journal_records (
      session_id TEXT NOT NULL, run_id TEXT NOT NULL, sequence INTEGER NOT NULL, text TEXT NOT NULL,
      PRIMARY KEY (session_id, run_id, sequence)
    ) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS quarantine (
      location TEXT PRIMARY KEY, collection TEXT NOT NULL, id TEXT NOT NULL, reason TEXT NOT NULL,
      quarantined_at INTEGER NOT NULL, bytes TEXT
    ) WITHOUT ROWID;
  `);
}

/** Every table, for the conformance initializer's power-loss restore. */
export const TABLES = [
  'documents',
  'document_deltas',
  'index_state',
  'index_entries',
  'journal_records',
  'quarantine',
] as const;
