import { createHash } from 'node:crypto';
import { once } from 'node:events';
import {
  appendFile,
  lstat,
  readdir,
  readFile,
  readlink,
  utimes,
  writeFile,
} from 'node:fs/promises';
import { join } from 'node:path';
import {
  createMessage,
  createSessionStore,
  ReadOnlyError,
  type StorageAdapter,
} from '@keepsake/core';
import { describe, expect, it } from 'vitest';
import { encodeId, fsAdapter, readOnlyFsReport } from '../src/index.js';
import { parseJournal } from '../src/journal-format.js';
import { spawnFixture, tempDirectory } from './helpers.js';

/**
 * Every entry under `root`: path, kind, size, mtime and the bytes' hash (a symlink lock: its
 * target). Reading a file changes none of these; creating, writing, renaming, truncating or
 * removing anything changes at least one (a directory's mtime moves with its entries).
 */
async function treeHash(root: string): Promise<string[]> {
  const lines: string[] = [];
  const visit = async (path: string, relative: string) => {
    const stats = await lstat(path);
    const kind = stats.isDirectory() ? 'dir' : stats.isSymbolicLink() ? 'link' : 'file';
    let content = '';
    if (kind === 'file')
      content = createHash('sha256')
        .update(await readFile(path))
        .digest('hex');
    if (kind === 'link') content = await readlink(path);
    lines.push(`${relative} ${kind} ${stats.size} ${stats.mtimeMs} ${content}`);
    if (kind === 'dir') {
      for (const name of (await readdir(path)).sort())
        await visit(join(path, name), `${relative}/${name}`);
    }
  };
  await visit(root, '.');
  return lines;
}

async function runThenDie(directory: string, ids: string, count: number): Promise<void> {
  const child = spawnFixture('crashed-run-child.ts', [directory, ids, `${count}`]);
  let errors = '';
  child.stderr.on('data', (chunk) => {
    errors += String(chunk);
  });
  const [code, signal] = await once(child, 'exit');
  if (signal !== 'SIGKILL') throw new Error(`child ended with ${code ?? signal}: ${errors}`);
}

/**
 * A store as an operator finds it after crashes: two runs SIGKILLed mid-answer (pending turns,
 * journals whose last appends are only in the dead processes' group-commit logs), a session
 * whose base fails its checksum, one whose deltas end in a torn frame, an old temp file.
 */
async function damagedStore(): Promise<string> {
  const directory = await tempDirectory();
  const store = createSessionStore({ adapter: fsAdapter({ directory }) });
  for (const id of ['alpha', 'beta', 'torn-base', 'torn-deltas']) {
    const session = await store.create({ id, title: id });
    for (const text of ['one', 'two']) {
      session.messages.push(createMessage({ role: 'user', content: `${text} ${id}` }));
      await store.save(session);
    }
  }
  await store.close();
  await runThenDie(directory, 'crashed-1,crashed-2', 40);
  const base = join(directory, 'sessions', encodeId('torn-base'), 'document');
  const bytes = await readFile(base);
  bytes[bytes.length - 3] = (bytes[bytes.length - 3] ?? 0) ^ 0xff;
  await writeFile(base, bytes);
  await appendFile(join(directory, 'sessions', encodeId('torn-deltas'), 'deltas'), 'torn');
  const temp = join(directory, 'sessions', encodeId('alpha'), 'document.123-0123456789ab-1.tmp');
  await writeFile(temp, 'left by a crash');
  await utimes(temp, new Date(0), new Date(0));
  return directory;
}

async function readEverything(adapter: StorageAdapter) {
  const journals: Record<string, unknown> = {};
  const documents: Record<string, unknown> = {};
  for (const id of (await adapter.listDocuments('sessions', { cursor: null, limit: 100 })).ids) {
    documents[id] = await adapter.getDocument('sessions', id);
    for (const runId of await adapter.listLogs(id)) {
      journals[`${id}/${runId}`] = await adapter.readLog(id, runId, {
        afterSequence: 0,
        limit: 1000,
      });
    }
  }
  return {
    documents,
    journals,
    index: await adapter.listIndex({ cursor: null, limit: 100 }),
    quarantined: await adapter.listQuarantined(),
  };
}

describe('fsAdapter({ readOnly: true })', () => {
  it('opens, reads and closes a crashed store without changing a byte of it, and reads what a replay would write', async () => {
    const directory = await damagedStore();
    expect((await readdir(join(directory, 'wal'))).length).toBeGreaterThanOrEqual(1);
    const before = await treeHash(directory);
    const inFiles: Record<string, number> = {};
    for (const id of ['crashed-1', 'crashed-2']) {
      const journals = join(directory, 'journals', encodeId(id));
      for (const name of await readdir(journals)) {
        if (!name.endsWith('.journal')) continue;
        inFiles[id] = parseJournal(await readFile(join(journals, name))).lastSequence;
      }
    }

    const reader = fsAdapter({ directory, readOnly: true });
    await reader.open();
    const seen = await readEverything(reader);
    const report = readOnlyFsReport(reader);
    expect(report?.deadLogs).toBeGreaterThanOrEqual(1);
    expect(report?.journalsInDeadLogs.map((key) => key.split('/')[0]).sort()).toEqual([
      'crashed-1',
      'crashed-2',
    ]);
    // A read-only store on top: loads repair in memory only (core's readOnly).
    const store = createSessionStore({
      adapter: fsAdapter({ directory, readOnly: true }),
      readOnly: true,
      recovery: { graceMs: 0 },
    });
    expect((await store.list()).sessions.length).toBeGreaterThan(0);
    const crashed = await store.load('crashed-1');
    expect(crashed.pending).toBeNull();
    await expect(store.load('torn-base')).rejects.toThrow(/does not parse|corrupt/i);
    await store.close();
    await reader.close();
    expect(await treeHash(directory)).toEqual(before);

    // What the read-only reads showed is what a writing open leaves in the files.
    const writer = fsAdapter({ directory });
    await writer.open();
    expect(await readdir(join(directory, 'wal'))).toEqual([]);
    const after = await readEverything(writer);
    await writer.close();
    expect(after.journals).toEqual(seen.journals);
    for (const key of Object.keys(seen.journals)) {
      const records = (seen.journals[key] as { records: unknown[] }).records;
      expect(records.length, key).toBe(40);
    }
    // Some of those records were in the dead process's log only, before the writing open.
    expect(Math.min(...Object.values(inFiles))).toBeLessThan(40);
    expect(after.documents).toEqual(seen.documents);
  });

  it('refuses every write with ReadOnlyError, before touching anything', async () => {
    const directory = await damagedStore();
    const before = await treeHash(directory);
    const reader = fsAdapter({ directory, readOnly: true });
    await reader.open();
    const summary = {
      id: 'alpha',
      title: 'x',
      createdAt: 1,
      updatedAt: 1,
      messageCount: 0,
      pending: false,
      parentId: null,
      rotatedTo: null,
    };
    const writes: Array<() => Promise<unknown>> = [
      () =>
        reader.putDocument(
          'sessions',
          'new',
          { kind: 'full', revision: 1, text: '{}' },
          { expectedRevision: null, durable: true },
        ),
      () => reader.deleteDocument('sessions', 'alpha', { durable: true }),
      () => reader.quarantineDocument('sessions', 'torn-base', 'test'),
      () => reader.putIndexEntry(summary, { durable: true }),
      () => reader.deleteIndexEntry('alpha', { durable: true }),
      () => reader.replaceIndex([summary], { durable: true }),
      () => reader.appendLog('s', 'r', [{ sequence: 1, text: '{}' }], { durability: 'each' }),
      () => reader.deleteLogs('crashed-1', { durable: true }),
      () => reader.deleteLog('crashed-1', 'r', { durable: true }),
    ];
    for (const write of writes) {
      const error = await write().then(
        () => null,
        (reason: unknown) => reason,
      );
      expect(ReadOnlyError.isInstance(error), String(error)).toBe(true);
    }
    await reader.sync();
    await reader.close();
    expect(await treeHash(directory)).toEqual(before);
  });

  it('E2: reads every append a live writer acknowledged, in its log or waiting in memory', async () => {
    const directory = await tempDirectory();
    const writer = fsAdapter({ directory });
    await writer.open();
    const reader = fsAdapter({ directory, readOnly: true });
    await reader.open();
    for (let sequence = 1; sequence <= 30; sequence++) {
      const text = JSON.stringify({ sequence });
      await writer.appendLog('s', 'r', [{ sequence, text }], { durability: 'group' });
      const read = await reader.readLog('s', 'r', { afterSequence: 0, limit: 100 });
      expect(read.records.map((record) => record.sequence).at(-1)).toBe(sequence);
    }
    await reader.close();
    await writer.close();
  });

  it('creates nothing where there is no store', async () => {
    const parent = await tempDirectory();
    const directory = join(parent, 'missing');
    const reader = fsAdapter({ directory, readOnly: true });
    await expect(reader.open()).rejects.toThrow(/no store there/);
    expect(await readdir(parent)).toEqual([]);
    // A fresh store (no index yet, no layout marker) reads as missing, and stays so.
    const empty = fsAdapter({ directory: parent, readOnly: true });
    await empty.open();
    expect(await empty.listIndex({ cursor: null, limit: 10 })).toEqual({ status: 'missing' });
    await empty.close();
    expect(await readdir(parent)).toEqual([]);
  });
});
