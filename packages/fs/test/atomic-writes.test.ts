import { readdir, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { BackendError } from '@keepsake/core';
import { describe, expect, it } from 'vitest';
import { RENAME_ATTEMPTS, renameWithRetry } from '../src/atomic-write.js';
import { type FileSystem, fsAdapter, nodeFileSystem } from '../src/index.js';
import { countingFileSystem, faultInjectingFileSystem } from '../src/testing/index.js';
import { delta, full, openAdapter, openSimulated, summary, tempDirectory } from './helpers.js';

/** A FileSystem that records the path of every exclusive create (FAULT-FREE instrumentation). */
function recordingExclusiveCreates(inner: FileSystem): { fileSystem: FileSystem; paths: string[] } {
  const paths: string[] = [];
  return {
    paths,
    fileSystem: {
      ...inner,
      open: async (path, flags) => {
        if (flags === 'wx') paths.push(path);
        return inner.open(path, flags);
      },
    },
  };
}

describe('atomic replace', () => {
  it('B2: concurrent saves of one session use distinct temp paths, created exclusively', async () => {
    const recorder = recordingExclusiveCreates(nodeFileSystem);
    const directory = await tempDirectory();
    const first = await openAdapter({ directory, fileSystem: recorder.fileSystem });
    const second = await openAdapter({ directory, fileSystem: recorder.fileSystem });
    await first.putDocument('sessions', 's', full(1, '{}'), {
      expectedRevision: null,
      durable: false,
    });
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, index) =>
        (index % 2 ? first : second).putDocument('sessions', 's', full(2 + index, `${index}`), {
          expectedRevision: 1,
          durable: false,
        }),
      ),
    );
    expect(results.filter((result) => result.ok)).toHaveLength(1);
    const temps = recorder.paths.filter((path) => path.endsWith('.tmp'));
    expect(temps.length).toBeGreaterThanOrEqual(2);
    expect(new Set(temps).size).toBe(temps.length);
    for (const path of temps)
      expect(path).toMatch(new RegExp(`\\.${process.pid}-[0-9a-f]{12}-\\d+\\.tmp$`));
  });

  it('B2: a write that fails removes its temp file and is reported as failed', async () => {
    const { adapter, disk } = await openSimulated();
    await adapter.putDocument('sessions', 's', full(1, '"old"'), {
      expectedRevision: null,
      durable: true,
    });
    disk.inject({ operation: 'rename', path: '/sessions/', code: 'EIO', times: 1 });
    await expect(
      adapter.putDocument('sessions', 's', full(2, '"new"'), {
        expectedRevision: 1,
        durable: true,
      }),
    ).rejects.toSatisfy(BackendError.isInstance);
    expect(await disk.readdir('/store/sessions/s=')).toEqual(['document']);
    expect(await adapter.getDocument('sessions', 's')).toEqual({
      revision: 1,
      base: '"old"',
      deltas: [],
    });
  });

  it('B2: temp files left by a crash are swept on open once older than tempMaxAgeMs', async () => {
    const directory = await tempDirectory();
    const adapter = await openAdapter({ directory });
    await adapter.putDocument('sessions', 's', full(1, '{}'), {
      expectedRevision: null,
      durable: false,
    });
    const documentDirectory = join(directory, 'sessions', 's=');
    const old = join(documentDirectory, 'document.999-0123456789ab-1.tmp');
    const young = join(documentDirectory, 'document.999-0123456789ab-2.tmp');
    const unrelated = join(documentDirectory, 'notes.txt');
    for (const path of [old, young, unrelated]) await writeFile(path, 'partial');
    const longAgo = new Date(Date.now() - 3_600_000);
    await utimes(old, longAgo, longAgo);
    await utimes(unrelated, longAgo, longAgo);
    await openAdapter({ directory, tempMaxAgeMs: 60_000 });
    // `lock` is the first adapter's lock, leased for a moment after its write: not the sweep's.
    const names = (await readdir(documentDirectory)).filter((name) => name !== 'lock');
    expect(names.sort()).toEqual(
      ['document', 'document.999-0123456789ab-2.tmp', 'notes.txt'].sort(),
    );
    expect((await adapter.listDocuments('sessions', { cursor: null, limit: 10 })).ids).toEqual([
      's',
    ]);
  });

  it('B2: with retrySharingViolations, only a sharing violation on rename is retried, a bounded number of times; one that lasts is reported retryable', async () => {
    let calls = 0;
    const failing = (code: string, failures: number): FileSystem => ({
      ...nodeFileSystem,
      rename: async () => {
        calls++;
        if (calls <= failures) throw Object.assign(new Error(code), { code });
      },
    });
    calls = 0;
    await renameWithRetry(failing('EPERM', 2), 'a', 'b', true);
    expect(calls).toBe(3);
    calls = 0;
    await expect(renameWithRetry(failing('EPERM', 2), 'a', 'b', false)).rejects.toThrow('EPERM');
    expect(calls).toBe(1);
    calls = 0;
    await expect(renameWithRetry(failing('EIO', 2), 'a', 'b', true)).rejects.toThrow('EIO');
    expect(calls).toBe(1);
    calls = 0;
    const lasting = renameWithRetry(failing('EBUSY', 99), 'a', 'b', true);
    await expect(lasting).rejects.toSatisfy(
      (error: unknown) =>
        BackendError.isInstance(error) &&
        error.isRetryable &&
        /sharing violation \(EBUSY\) lasted through 5 attempts/.test(error.message),
    );
    expect(calls).toBe(RENAME_ATTEMPTS);
  });
});

describe('durability', () => {
  it('B3: with durable false no fsync call is made at all', async () => {
    const counting = countingFileSystem(nodeFileSystem);
    const adapter = await openAdapter({ fileSystem: counting.fileSystem });
    const options = { expectedRevision: null, durable: false } as const;
    await adapter.putDocument('sessions', 's', full(1, '{"n":1}'), options);
    await adapter.putDocument('sessions', 's', delta(2, '{"n":2}'), {
      ...options,
      expectedRevision: 1,
    });
    await adapter.putDocument('sessions', 's', full(3, '{"n":3}'), {
      ...options,
      expectedRevision: 2,
    });
    await adapter.putIndexEntry(summary('s', 5), { durable: false });
    await adapter.appendLog('s', 'r', [{ sequence: 1, text: '{}' }], { durability: 'none' });
    await adapter.deleteDocument('sessions', 's', { durable: false });
    await adapter.deleteLogs('s', { durable: false });
    expect(counting.counts.sync + counting.counts.datasync).toBe(0);
  });

  it('B3: a durable full write fsyncs the temp file, then the directory after the rename', async () => {
    const counting = countingFileSystem(nodeFileSystem);
    const adapter = await openAdapter({ fileSystem: counting.fileSystem });
    const options = { expectedRevision: null, durable: true } as const;
    await adapter.putDocument('sessions', 'warm', full(1, '{}'), options);
    counting.counts.sync = 0;
    await adapter.putDocument('sessions', 'warm', full(2, '{}'), {
      ...options,
      expectedRevision: 1,
    });
    // Temp file + document directory; the parents were made durable by the first write.
    expect(counting.counts.sync).toBe(2);
    counting.counts.sync = 0;
    counting.counts.datasync = 0;
    await adapter.putDocument('sessions', 'warm', delta(3, '{}'), {
      ...options,
      expectedRevision: 2,
    });
    await adapter.putDocument('sessions', 'warm', delta(4, '{}'), {
      ...options,
      expectedRevision: 3,
    });
    // The first delta creates the delta file (temp fsync + directory); the second is one fdatasync.
    expect(counting.counts.sync).toBe(2);
    expect(counting.counts.datasync).toBe(1);
  });

  it('B3: a directory that cannot be fsynced (EPERM, EISDIR, EINVAL) is tolerated; EIO fails the write', async () => {
    for (const code of ['EPERM', 'EISDIR', 'EINVAL']) {
      const { adapter, disk } = await openSimulated();
      disk.inject({ operation: 'sync', path: /\/store\/sessions\/s=$/, code });
      const result = await adapter.putDocument('sessions', 's', full(1, '{}'), {
        expectedRevision: null,
        durable: true,
      });
      expect(result).toEqual({ ok: true });
    }
    const { adapter, disk } = await openSimulated();
    disk.inject({ operation: 'sync', path: /\/store\/sessions\/s=$/, code: 'EIO' });
    await expect(
      adapter.putDocument('sessions', 's', full(1, '{}'), {
        expectedRevision: null,
        durable: true,
      }),
    ).rejects.toSatisfy(BackendError.isInstance);
  });

  it('B3: sync() makes every earlier non-durable write survive a power loss', async () => {
    const disk = faultInjectingFileSystem();
    const { adapter } = await openSimulated(disk);
    const options = { expectedRevision: null, durable: false } as const;
    await adapter.putDocument('sessions', 'a', full(1, '"a1"'), options);
    await adapter.putDocument('sessions', 'a', delta(2, '"a2"'), {
      ...options,
      expectedRevision: 1,
    });
    await adapter.putDocument('lifecycle', 'a', full(1, '"l"'), options);
    await adapter.appendLog('a', 'r', [{ sequence: 1, text: '"e1"' }], { durability: 'none' });
    await adapter.putIndexEntry(summary('a', 3), { durable: false });
    await adapter.sync();
    disk.simulatePowerLoss();
    const restarted = fsAdapter({ directory: '/store', fileSystem: disk });
    await restarted.open();
    expect(await restarted.getDocument('sessions', 'a')).toEqual({
      revision: 2,
      base: '"a1"',
      deltas: ['"a2"'],
    });
    expect((await restarted.getDocument('lifecycle', 'a'))?.base).toBe('"l"');
    expect((await restarted.readLog('a', 'r', { afterSequence: 0, limit: 10 })).records).toEqual([
      { sequence: 1, text: '"e1"' },
    ]);
    expect(await restarted.listIndex({ cursor: null, limit: 10 })).toMatchObject({
      status: 'ok',
      entries: [{ id: 'a' }],
    });
    await restarted.close();
  });

  it('B3: fsync reaches the whole chain up to the root, so a durable write survives power loss on a fresh disk', async () => {
    const disk = faultInjectingFileSystem();
    const adapter = fsAdapter({ directory: '/deep/store', fileSystem: disk });
    await adapter.open();
    await adapter.putDocument('sessions', 's', full(1, '"kept"'), {
      expectedRevision: null,
      durable: true,
    });
    await adapter.appendLog('s', 'r', [{ sequence: 1, text: '"e"' }], { durability: 'group' });
    await adapter.close();
    disk.simulatePowerLoss();
    const restarted = fsAdapter({ directory: '/deep/store', fileSystem: disk });
    await restarted.open();
    expect((await restarted.getDocument('sessions', 's'))?.base).toBe('"kept"');
    expect(
      (await restarted.readLog('s', 'r', { afterSequence: 0, limit: 10 })).records,
    ).toHaveLength(1);
    await restarted.close();
  });
});
