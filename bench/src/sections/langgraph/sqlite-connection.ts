import { createRequire } from 'node:module';
import { DatabaseSync, type SQLInputValue } from 'node:sqlite';

/** What `SqliteSaver` calls on its better-sqlite3 `Database`. */
export interface SaverDatabase {
  pragma(text: string): unknown;
  exec(sql: string): unknown;
  prepare(sql: string): {
    run(...parameters: unknown[]): unknown;
    get(...parameters: unknown[]): unknown;
    all(...parameters: unknown[]): unknown[];
  };
  transaction<A extends unknown[], R>(body: (...args: A) => R): (...args: A) => R;
  close(): unknown;
}

export interface OpenedConnection {
  readonly database: SaverDatabase;
  /** "better-sqlite3" or "node:sqlite (better-sqlite3's native build is not installed)". */
  readonly driver: string;
}

/**
 * A SQLite connection for `SqliteSaver`: better-sqlite3 when its native module is built;
 * otherwise the same calls on Node's built-in `node:sqlite` (pnpm does not run
 * better-sqlite3's build script unless the workspace allows it). Either way SqliteSaver's
 * own code issues the same SQL to the same SQLite file format; only the binding differs.
 */
export function openSqlite(file: string): OpenedConnection {
  try {
    const require = createRequire(import.meta.url);
    const resolved = createRequire(
      require.resolve('@langchain/langgraph-checkpoint-sqlite'),
    ).resolve('better-sqlite3');
    const Database = require(resolved) as new (path: string) => SaverDatabase;
    return { database: new Database(file), driver: 'better-sqlite3' };
  } catch {
    return {
      database: new NodeSqliteDatabase(file),
      driver: "node:sqlite (better-sqlite3's native build is not installed)",
    };
  }
}

/** better-sqlite3's API, as far as SqliteSaver uses it, on `node:sqlite`. */
class NodeSqliteDatabase implements SaverDatabase {
  private readonly database: DatabaseSync;

  constructor(file: string) {
    this.database = new DatabaseSync(file);
  }

  pragma(text: string): unknown {
    return this.database.prepare(`PRAGMA ${text}`).all();
  }

  exec(sql: string): this {
    this.database.exec(sql);
    return this;
  }

  prepare(sql: string) {
    const statement = this.database.prepare(sql);
    return {
      run: (...parameters: unknown[]) => statement.run(...bound(parameters)),
      get: (...parameters: unknown[]) => statement.get(...bound(parameters)),
      all: (...parameters: unknown[]) => statement.all(...bound(parameters)),
    };
  }

  transaction<A extends unknown[], R>(body: (...args: A) => R): (...args: A) => R {
    return (...args: A) => {
      this.database.exec('BEGIN');
      try {
        const result = body(...args);
        this.database.exec('COMMIT');
        return result;
      } catch (error) {
        this.database.exec('ROLLBACK');
        throw error;
      }
    };
  }

  close(): void {
    this.database.close();
  }
}

/** better-sqlite3 binds `undefined` as NULL (SqliteSaver passes it for a missing parent). */
function bound(parameters: unknown[]): SQLInputValue[] {
  return parameters.map((parameter) =>
    parameter === undefined ? null : parameter,
  ) as SQLInputValue[];
}
