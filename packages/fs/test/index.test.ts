import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { BackendError, InvalidInputError, type StorageAdapter } from '@keepsake/core';
import { describe, expect, it } from 'vitest';
import { fsAdapter } from '../src/index.js';
import { faultInjectingFileSystem } from '../src/testing/index.js';
import { full, openAdapter, openSimulated, summary } from './helpers.js';

async function listAll(adapter: Awaited<ReturnType<typeof openAdapter>>, limit: number) {
  const ids: string[] = [];
  let cursor: string | null = null;
  do {
    const page = await adapter.listIndex({ cursor, limit });
    if (page.status !== 'ok') throw new Error(`index ${page.status}`);
    ids.push(...page.entries.map((entry) => (entry as { id: string }).id));
    cursor = page.nextCursor;
  } while (cursor !== null);
  return ids;
}

describe('session index', () => {
  it('B7: a fresh store starts with an empty index; entries come newest first, then by id', async () => {
    const adapter = await openAdapter();
    expect(await adapter.listIndex({ cursor: null, limit: 10 })).toEqual({
      status: 'ok',
      entries: [],
      nextCursor: null,
    });
    await adapter.putIndexEntry(summary('b', 10), { durable: false });
    await adapter.putIndexEntry(summary('a', 10), { durable: true });
    await adapter.putIndexEntry(summary('c', 30), { durable: false });
    await adapter.putIndexEntry(summary('d', 20), { durable: false });
    await adapter.putIndexEntry(summary('d', 5, 'moved'), { durable: false });
    await adapter.deleteIndexEntry('c', { durable: false });
    expect(await listAll(adapter, 10)).toEqual(['a', 'b', 'd']);
    expect(await listAll(adapter, 1)).toEqual(['a', 'b', 'd']);
    const page = await adapter.listIndex({ cursor: null, limit: 10 });
    expect(page).toMatchObject({ status: 'ok', entries: [{}, {}, { id: 'd', title: 'moved' }] });
    await expect(adapter.listIndex({ cursor: 'not-a-cursor', limit: 1 })).rejects.toSatisfy(
      InvalidInputError.isInstance,
    );
  });

  it('B7: a page cursor stays correct when entries change between pages', async () => {
    const adapter = await openAdapter();
    for (let index = 0; index < 6; index++) {
      await adapter.putIndexEntry(summary(`s${index}`, 100 - index), { durable: false });
    }
    const first = await adapter.listIndex({ cursor: null, limit: 3 });
    if (first.status !== 'ok') throw new Error('index not ok');
    await adapter.deleteIndexEntry('s1', { durable: false });
    await adapter.putIndexEntry(summary('new', 1000), { durable: false });
    const second = await adapter.listIndex({ cursor: first.nextCursor, limit: 10 });
    expect(second).toMatchObject({ status: 'ok', nextCursor: null });
    if (second.status !== 'ok') throw new Error('index not ok');
    expect(second.entries.map((entry) => (entry as { id: string }).id)).toEqual(['s3', 's4', 's5']);
  });

  it('B7: many puts compact the index and keep every entry', async () => {
    const { adapter, disk } = await openSimulated();
    for (let index = 0; index < 300; index++) {
      await adapter.putIndexEntry(summary(`s${index % 150}`, index), { durable: false });
    }
    const page = await adapter.listIndex({ cursor: null, limit: 1000 });
    if (page.status !== 'ok') throw new Error('index not ok');
    expect(page.entries).toHaveLength(150);
    expect((page.entries[0] as { updatedAt: number }).updatedAt).toBe(299);
    const deltas = disk.peek('/store/index/deltas')?.length ?? 0;
    expect(deltas).toBeLessThan(100 * 200);
  });

  it('B7: an index that is missing is reported missing, and puts do not turn it into a partial one', async () => {
    const disk = faultInjectingFileSystem();
    const { adapter } = await openSimulated(disk);
    await adapter.putDocument('sessions', 'a', full(1, '{}'), {
      expectedRevision: null,
      durable: true,
    });
    await adapter.putIndexEntry(summary('a', 1), { durable: true });
    await disk.unlink('/store/index/document');
    await disk.unlink('/store/index/deltas');
    const restarted = fsAdapter({ directory: '/store', fileSystem: disk });
    await restarted.open();
    expect(await restarted.listIndex({ cursor: null, limit: 10 })).toEqual({ status: 'missing' });
    await restarted.putIndexEntry(summary('b', 2), { durable: true });
    expect(await restarted.listIndex({ cursor: null, limit: 10 })).toEqual({ status: 'missing' });
    await restarted.replaceIndex([summary('a', 1), summary('b', 2)], { durable: true });
    expect(await restarted.listIndex({ cursor: null, limit: 10 })).toMatchObject({
      status: 'ok',
      entries: [{ id: 'b' }, { id: 'a' }],
    });
    await restarted.close();
  });

  it('B7: an index that does not read back is reported corrupt', async () => {
    const adapter = await openAdapter();
    await adapter.putIndexEntry(summary('a', 1), { durable: false });
    await writeFile(join(adapter.directory, 'index', 'document'), 'garbage');
    expect(await adapter.listIndex({ cursor: null, limit: 10 })).toMatchObject({
      status: 'corrupt',
    });
    await adapter.replaceIndex([summary('a', 1)], { durable: false });
    expect(await adapter.listIndex({ cursor: null, limit: 10 })).toMatchObject({ status: 'ok' });
  });
});

/** The titles the index lists, by session id. */
async function indexedTitles(adapter: StorageAdapter): Promise<Map<string, string>> {
  const page = await adapter.listIndex({ cursor: null, limit: 100 });
  if (page.status !== 'ok') throw new Error(`index ${page.status}`);
  return new Map(
    page.entries.map((entry) => {
      const { id, title } = entry as { id: string; title: string };
      return [id, title];
    }),
  );
}

describe('index entry carried by the document write (indexWithDocument)', () => {
  const landed = { expectedRevision: null, durable: true } as const;

  it('B7: a landed write carries its entry; a refused write leaves the index alone', async () => {
    const { adapter } = await openSimulated();
    expect(adapter.capabilities.indexWithDocument).toBe(true);
    const first = { ...landed, indexEntry: summary('s', 5, 'one') };
    expect(await adapter.putDocument('sessions', 's', full(1, '{}'), first)).toEqual({ ok: true });
    const refused = { ...landed, indexEntry: summary('s', 6, 'refused') };
    expect(await adapter.putDocument('sessions', 's', full(2, '{}'), refused)).toEqual({
      ok: false,
      currentRevision: 1,
    });
    expect((await indexedTitles(adapter)).get('s')).toBe('one');
  });

  it('B3: a document flush that fails is reported, and the next save heals the entry', async () => {
    const { adapter, disk } = await openSimulated();
    // FAULT INJECTION: the fsync of the session's temp file fails once.
    disk.inject({ operation: 'sync', path: /\/store\/sessions\/.*\.tmp$/, code: 'EIO', times: 1 });
    const lost = { ...landed, indexEntry: summary('s', 5, 'lost') };
    await expect(adapter.putDocument('sessions', 's', full(1, '{}'), lost)).rejects.toSatisfy(
      BackendError.isInstance,
    );
    expect(await adapter.getDocument('sessions', 's')).toBeNull();
    const healed = { ...landed, indexEntry: summary('s', 6, 'healed') };
    expect(await adapter.putDocument('sessions', 's', full(1, '{}'), healed)).toEqual({
      ok: true,
    });
    expect((await indexedTitles(adapter)).get('s')).toBe('healed');
  });

  it('B3/B7: an index flush that fails is reported beside the landed write, not as its failure', async () => {
    const { adapter, disk } = await openSimulated();
    // FAULT INJECTION: the fsync of the index's temp file fails once.
    disk.inject({ operation: 'sync', path: /\/store\/index\/.*\.tmp$/, code: 'EIO', times: 1 });
    const entry = { ...landed, indexEntry: summary('s', 5, 'one') };
    const result = await adapter.putDocument('sessions', 's', full(1, '{}'), entry);
    // The document landed (durably): the write succeeded, its entry did not.
    expect(result.ok).toBe(true);
    expect(result.ok && result.indexFailure).toSatisfy(BackendError.isInstance);
    expect(await adapter.getDocument('sessions', 's')).toEqual({
      revision: 1,
      base: '{}',
      deltas: [],
    });
    expect((await indexedTitles(adapter)).has('s')).toBe(false);
    // The entry written again (as core does) lists the session.
    await adapter.putIndexEntry(summary('s', 5, 'one'), { durable: true });
    expect((await indexedTitles(adapter)).get('s')).toBe('one');
  });

  it('B7: an entry the index cannot take is refused before the document is touched', async () => {
    const { adapter } = await openSimulated();
    const broken = { ...landed, indexEntry: { id: 's' } as unknown as ReturnType<typeof summary> };
    await expect(adapter.putDocument('sessions', 's', full(1, '{}'), broken)).rejects.toSatisfy(
      InvalidInputError.isInstance,
    );
    expect(await adapter.getDocument('sessions', 's')).toBeNull();
  });
});
