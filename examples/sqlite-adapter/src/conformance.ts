import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { fileURLToPath } from 'node:url';
import type { ConformanceInitializer } from '@keepsake/conformance';
import type { StorageAdapter } from '@keepsake/core';
import { TABLES } from './schema.js';
import { sqliteAdapter } from './sqlite-adapter.js';

/**
 * The root of every namespace's database. Kept in the environment so the suite's second
 * process (sharedAcrossProcesses) finds the same files.
 */
const ROOT_VARIABLE = 'KEEPSAKE_EXAMPLE_SQLITE_ROOT';

function root(): string {
  let directory = process.env[ROOT_VARIABLE];
  if (directory === undefined) {
    directory = mkdtempSync(join(tmpdir(), 'keepsake-sqlite-conformance-'));
    process.env[ROOT_VARIABLE] = directory;
  }
  return directory;
}

function files(namespace: string) {
  const directory = join(root(), namespace);
  mkdirSync(directory, { recursive: true });
  return {
    directory,
    live: join(directory, 'keepsake.sqlite'),
    // What a power loss leaves: a copy taken after every durable commit.
    stable: join(directory, 'stable.sqlite'),
  };
}

/** Copies taken by this process so far (names its temporary copy files). */
let copies = 0;

/** Runs `body` on a short-lived connection to the live database, in one transaction. */
function withConnection(file: string, body: (database: DatabaseSync) => void): void {
  const database = new DatabaseSync(file);
  try {
    database.exec('PRAGMA busy_timeout = 10000; BEGIN IMMEDIATE');
    body(database);
    database.exec('COMMIT');
  } finally {
    database.close();
  }
}

/**
 * How `@keepsake/conformance` gets adapters of this package. `simulateCrash` is a power loss:
 * in WAL mode with `synchronous=NORMAL`, a commit made with `synchronous=FULL` syncs the WAL
 * and so every commit before it; so after every durable commit the adapter's hook copies the
 * database (`VACUUM INTO`), and a crash restores that copy into the live file, in place, so
 * that connections other processes hold go on working. The copy is taken through the open
 * connection, never by closing it and copying the files: closing the last connection
 * checkpoints the WAL into the database file, and a copy taken then would hold every
 * non-durable commit too (the suite would then report the crash tests "not verified: the
 * crash simulation never lost a non-durable write").
 */
export const sqliteAdapterConformance: ConformanceInitializer = {
  name: 'example-sqlite',
  initializerModule: fileURLToPath(import.meta.url),
  async setup() {
    root();
  },
  async teardown() {
    const directory = process.env[ROOT_VARIABLE];
    if (directory !== undefined) rmSync(directory, { recursive: true, force: true });
  },
  async createAdapter(namespace): Promise<StorageAdapter> {
    const { live, stable } = files(namespace);
    return sqliteAdapter({
      file: live,
      afterDurableCommit(database) {
        // Into a file of this process's own, then renamed over the copy at once: the suite's
        // real second processes commit too, and one of them may be SIGKILLed mid-copy.
        const copy = `${stable}.${process.pid}.${(copies++).toString(36)}.tmp`;
        database.prepare('VACUUM INTO ?').run(copy);
        renameSync(copy, stable);
      },
    });
  },
  async releaseAdapter(adapter) {
    await adapter.close();
  },
  async destroyNamespace(namespace) {
    rmSync(files(namespace).directory, { recursive: true, force: true });
  },
  async simulateCrash(namespace) {
    const { live, stable } = files(namespace);
    if (!existsSync(live)) return;
    withConnection(live, (database) => {
      const hasStable = existsSync(stable);
      if (hasStable) database.prepare('ATTACH DATABASE ? AS stable').run(stable);
      for (const table of TABLES) {
        database.exec(`DELETE FROM main.${table}`);
        if (hasStable) database.exec(`INSERT INTO main.${table} SELECT * FROM stable.${table}`);
      }
    });
  },
  async removeIndex(namespace) {
    const { live, stable } = files(namespace);
    for (const file of [live, stable]) {
      if (!existsSync(file)) continue;
      withConnection(file, (database) => {
        database.exec('DELETE FROM index_entries; DELETE FROM index_state;');
      });
    }
  },
};

/** The suite's second process imports this module's default export (`initializerModule`). */
export default sqliteAdapterConformance;
