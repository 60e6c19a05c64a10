import { readdir, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openAdapter, tempDirectory } from './helpers.js';

/**
 * H1 (issue 35): a store's directory is a namespace of its own, also when another store's
 * directory sits inside it (`<root>/index`, `<root>/journals`, `<root>/sessions/x`). Ids
 * become encoded names that always hold a `=`, so the documents, journals and deletes of one
 * store never reach the other's files; these tests pin the two places that looked at every
 * name of a directory: the sweep of leftovers at open, and the check for an empty store.
 */
const STALE = new Date(Date.now() - 3_600_000);

async function plantStale(path: string): Promise<void> {
  await writeFile(path, 'partial');
  await utimes(path, STALE, STALE);
}

describe('nested store directories (H1)', () => {
  it("H1, B2: the sweep at open removes only this store's leftovers, never those of a store in <root>/index or <root>/journals", async () => {
    const root = await tempDirectory();
    const outer = await openAdapter({ directory: root });
    await outer.close();
    const inIndex = await openAdapter({ directory: join(root, 'index') });
    const inJournals = await openAdapter({ directory: join(root, 'journals') });
    await inIndex.close();
    await inJournals.close();
    const theirs = [
      join(root, 'index', 'keepsake-fs.json.999-0123456789ab-1.tmp'),
      join(root, 'journals', 'index', 'document.999-0123456789ab-2.tmp'),
      join(root, 'journals', 'index', 'lock.wait'),
    ];
    const ours = join(root, 'index', 'document.999-0123456789ab-3.tmp');
    for (const path of [...theirs, ours]) await plantStale(path);
    await openAdapter({ directory: root, tempMaxAgeMs: 60_000 });
    expect(await readdir(join(root, 'index'))).toContain('keepsake-fs.json.999-0123456789ab-1.tmp');
    expect(await readdir(join(root, 'journals', 'index'))).toEqual(
      expect.arrayContaining(['document.999-0123456789ab-2.tmp', 'lock.wait']),
    );
    // The outer store's own leftover in its index directory goes, as before (B2).
    expect(await readdir(join(root, 'index'))).not.toContain('document.999-0123456789ab-3.tmp');
  });

  it('H1, B7: a store opened on a directory that holds only another store (in <root>/sessions/x) starts with an empty index, not a missing one', async () => {
    const root = await tempDirectory();
    const inner = await openAdapter({ directory: join(root, 'sessions', 'x') });
    await inner.putDocument(
      'sessions',
      's',
      { kind: 'full', revision: 1, text: '{}' },
      { expectedRevision: null, durable: true },
    );
    const outer = await openAdapter({ directory: root });
    expect(await outer.listIndex({ cursor: null, limit: 10 })).toEqual({
      status: 'ok',
      entries: [],
      nextCursor: null,
    });
    expect((await outer.listDocuments('sessions', { cursor: null, limit: 10 })).ids).toEqual([]);
    await outer.deleteLogs('x', { durable: true });
    await outer.deleteDocument('sessions', 'x', { durable: true });
    expect((await inner.getDocument('sessions', 's'))?.revision).toBe(1);
  });
});
