import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqliteJournal } from './sqlite-journal.js';

// The peer must be the durable configuration it is reported as (WAL, synchronous = FULL),
// and an append must be committed when it returns: a row per event, each its own transaction.
describe('the SQLite journal peer', () => {
  let directory: string;

  beforeEach(async () => {
    directory = await mkdtemp(join(tmpdir(), 'keepsake-bench-sqlite-'));
  });

  afterEach(async () => {
    await rm(directory, { recursive: true, force: true });
  });

  it('runs in WAL mode with synchronous = FULL', () => {
    const journal = new SqliteJournal(join(directory, 'journal.db'));
    try {
      // synchronous: 0 OFF, 1 NORMAL, 2 FULL, 3 EXTRA.
      expect(journal.settings()).toEqual({ journalMode: 'wal', synchronous: 2 });
    } finally {
      journal.close();
    }
  });

  it('commits each append as a row another connection reads at once', () => {
    const file = join(directory, 'journal.db');
    const journal = new SqliteJournal(file);
    const reader = new DatabaseSync(file, { readOnly: true });
    try {
      journal.append(0, 1, { type: 'token', data: { text: 'a' } });
      journal.append(1, 1, { type: 'token', data: { text: 'b' } });
      journal.append(0, 2, { type: 'token', data: { text: 'c' } });
      const rows = reader
        .prepare('SELECT stream, sequence, type, data FROM events ORDER BY stream, sequence')
        .all();
      expect(rows.map((row) => ({ ...row }))).toEqual([
        { stream: 0, sequence: 1, type: 'token', data: '{"text":"a"}' },
        { stream: 0, sequence: 2, type: 'token', data: '{"text":"c"}' },
        { stream: 1, sequence: 1, type: 'token', data: '{"text":"b"}' },
      ]);
    } finally {
      reader.close();
      journal.close();
    }
  });
});
