import { DatabaseSync, type StatementSync } from 'node:sqlite';

/** The name the SQLite peer goes by in the journal section's tables. */
export const SQLITE_ROW_PER_EVENT = 'SQLite, a row per event';

/** A streamed event as `run.append` gets it. */
export interface JournalEvent {
  readonly type: string;
  readonly data: unknown;
}

/**
 * What a user would otherwise reach for to journal a run's events: SQLite through Node's
 * built-in `node:sqlite`, in WAL mode with `synchronous = FULL` (the WAL is fsynced at every
 * commit, so a committed row survives a power loss, as a durable append must, B3), one row
 * per event, every append its own transaction. `DatabaseSync` commits on the calling
 * thread: the event loop waits out each commit's fsync, as it does in any program that uses
 * it.
 */
export class SqliteJournal {
  private readonly database: DatabaseSync;
  private readonly insert: StatementSync;

  constructor(file: string) {
    this.database = new DatabaseSync(file);
    this.database.exec('PRAGMA journal_mode = WAL');
    this.database.exec('PRAGMA synchronous = FULL');
    this.database.exec(
      'CREATE TABLE IF NOT EXISTS events (' +
        'stream INTEGER NOT NULL, sequence INTEGER NOT NULL, type TEXT NOT NULL, ' +
        'data TEXT NOT NULL, PRIMARY KEY (stream, sequence)) WITHOUT ROWID',
    );
    this.insert = this.database.prepare(
      'INSERT INTO events (stream, sequence, type, data) VALUES (?, ?, ?, ?)',
    );
  }

  /**
   * Appends one event as its own transaction (autocommit: the INSERT commits on its own),
   * serializing its data as it comes; durable once it returns.
   */
  append(stream: number, sequence: number, event: JournalEvent): void {
    this.insert.run(stream, sequence, event.type, JSON.stringify(event.data));
  }

  /** The journal mode and synchronous level in force, to check the peer is what it says. */
  settings(): { journalMode: string; synchronous: number } {
    const mode = this.database.prepare('PRAGMA journal_mode').get() as { journal_mode: string };
    const level = this.database.prepare('PRAGMA synchronous').get() as { synchronous: number };
    return { journalMode: mode.journal_mode, synchronous: level.synchronous };
  }

  close(): void {
    this.database.close();
  }
}
