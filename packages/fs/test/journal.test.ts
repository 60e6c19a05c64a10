import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { BackendError, InvalidIdError, InvalidInputError } from '@keepsake/core';
import { describe, expect, it, vi } from 'vitest';
import { encodeId, fsAdapter, nodeFileSystem } from '../src/index.js';
import { IDLE_MS } from '../src/journal-hold.js';
import { countingFileSystem, faultInjectingFileSystem } from '../src/testing/index.js';
import { openAdapter, openSimulated } from './helpers.js';

const record = (sequence: number) => ({ sequence, text: JSON.stringify({ sequence }) });
const records = (from: number, count: number) =>
  Array.from({ length: count }, (_, index) => record(from + index));

describe('journals', () => {
  it('E2: records[0].sequence must be exactly last + 1, else nothing is written', async () => {
    const adapter = await openAdapter();
    const group = { durability: 'group' } as const;
    expect(await adapter.appendLog('s', 'r', [record(2)], group)).toEqual({
      ok: false,
      lastSequence: 0,
    });
    expect(await adapter.appendLog('s', 'r', records(1, 3), group)).toEqual({ ok: true });
    expect(await adapter.appendLog('s', 'r', [record(3)], group)).toEqual({
      ok: false,
      lastSequence: 3,
    });
    expect(await adapter.appendLog('s', 'r', [record(5)], group)).toEqual({
      ok: false,
      lastSequence: 3,
    });
    expect(await adapter.appendLog('s', 'r', [record(4)], group)).toEqual({ ok: true });
    const read = await adapter.readLog('s', 'r', { afterSequence: 1, limit: 2 });
    expect(read).toEqual({ exists: true, records: [record(2), record(3)], tornTail: false });
    expect(await adapter.readLog('s', 'other', { afterSequence: 0, limit: 10 })).toEqual({
      exists: false,
      records: [],
      tornTail: false,
    });
    await expect(adapter.appendLog('s', 'r', [record(5), record(7)], group)).rejects.toSatisfy(
      InvalidInputError.isInstance,
    );
  });

  it('A1: appendLog and deleteLog reject bad ids, and a closed adapter, with typed errors, also once a writer exists', async () => {
    const adapter = await openAdapter();
    const group = { durability: 'group' } as const;
    expect(await adapter.appendLog('a', 'b', [record(1)], group)).toEqual({ ok: true });
    // A writer for (a, b) exists: ids that would spell its key still fail their check.
    for (const [sessionId, runId] of [
      ['a/b', 'c'],
      ['a', 'b/c'],
      ['', 'a'],
      ['a', '..'],
    ] as const) {
      const appended = adapter.appendLog(sessionId, runId, [record(1)], group);
      await expect(appended).rejects.toSatisfy(InvalidIdError.isInstance);
    }
    expect(await adapter.appendLog('a', 'b', [record(2)], group)).toEqual({ ok: true });
    // Deleting one journal checks its ids too, before they become paths.
    for (const [sessionId, runId] of [
      ['a/b', 'c'],
      ['a', '../b'],
    ] as const) {
      await expect(adapter.deleteLog(sessionId, runId, { durable: false })).rejects.toSatisfy(
        InvalidIdError.isInstance,
      );
    }
    await adapter.close();
    await expect(adapter.appendLog('a', 'b', [record(3)], group)).rejects.toSatisfy(
      (error: unknown) => BackendError.isInstance(error) && /closed/.test(String(error)),
    );
  });

  it('E2: two adapters on one journal never interleave: one wins each sequence', async () => {
    const first = await openAdapter();
    const second = await openAdapter({ directory: first.directory });
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, index) =>
        (index % 2 ? first : second).appendLog('s', 'r', [record(1)], { durability: 'none' }),
      ),
    );
    expect(results.filter((result) => result.ok)).toHaveLength(1);
    expect(await second.appendLog('s', 'r', [record(2)], { durability: 'none' })).toEqual({
      ok: true,
    });
    expect(await first.appendLog('s', 'r', [record(2)], { durability: 'none' })).toEqual({
      ok: false,
      lastSequence: 2,
    });
    expect(await first.appendLog('s', 'r', [record(3)], { durability: 'none' })).toEqual({
      ok: true,
    });
    const read = await second.readLog('s', 'r', { afterSequence: 0, limit: 10 });
    expect(read.records.map((entry) => entry.sequence)).toEqual([1, 2, 3]);
  });

  it('E3: a torn last record is ignored on read and cut off by the next append', async () => {
    const adapter = await openAdapter();
    await adapter.appendLog('s', 'r', records(1, 2), { durability: 'none' });
    await adapter.appendLog('s', 'r', [record(3)], { durability: 'none' });
    const path = join(adapter.directory, 'journals', encodeId('s'), `${encodeId('r')}.journal`);
    const bytes = await readFile(path);
    await writeFile(path, bytes.subarray(0, bytes.length - 4));
    const torn = await adapter.readLog('s', 'r', { afterSequence: 0, limit: 10 });
    expect(torn).toEqual({ exists: true, records: records(1, 2), tornTail: true });
    // Another adapter (a restart) repairs it on its first append.
    const restarted = await openAdapter({ directory: adapter.directory });
    expect(await restarted.appendLog('s', 'r', [record(4)], { durability: 'none' })).toEqual({
      ok: false,
      lastSequence: 2,
    });
    expect(await restarted.appendLog('s', 'r', [record(3)], { durability: 'group' })).toEqual({
      ok: true,
    });
    expect(await restarted.readLog('s', 'r', { afterSequence: 0, limit: 10 })).toEqual({
      exists: true,
      records: records(1, 3),
      tornTail: false,
    });
  });

  it('E2: group commit: concurrent appends to many journals share one flush, each resolving once durable', async () => {
    const counting = countingFileSystem(nodeFileSystem);
    const adapter = await openAdapter({ fileSystem: counting.fileSystem });
    const runs = Array.from({ length: 50 }, (_, index) => `run${index}`);
    // The first append of a journal creates it and flushes it by itself; the first append
    // through the log creates the log.
    await Promise.all(
      runs.map((run) => adapter.appendLog('s', run, [record(1)], { durability: 'group' })),
    );
    await adapter.appendLog('warm', 'up', [record(1)], { durability: 'group' });
    await adapter.appendLog('warm', 'up', [record(2)], { durability: 'group' });
    counting.counts.datasync = 0;
    counting.counts.sync = 0;
    const appends = runs.map((run) =>
      adapter.appendLog('s', run, [record(2)], { durability: 'group' }),
    );
    expect(await Promise.all(appends)).toEqual(appends.map(() => ({ ok: true })));
    // The first append flushes alone; the others, queued meanwhile, share the next flush.
    expect(counting.counts.sync).toBe(0);
    expect(counting.counts.datasync).toBeLessThanOrEqual(3);
    counting.counts.datasync = 0;
    counting.counts.sync = 0;
    await Promise.all(
      runs.map((run) => adapter.appendLog('s', run, [record(3)], { durability: 'each' })),
    );
    expect(counting.counts.datasync).toBe(50);
    for (const run of runs) {
      expect((await adapter.readLog('s', run, { afterSequence: 0, limit: 10 })).records).toEqual(
        records(1, 3),
      );
    }
  });

  it('E2: concurrent appends to one journal share one flush too', async () => {
    const counting = countingFileSystem(nodeFileSystem);
    const adapter = await openAdapter({ fileSystem: counting.fileSystem });
    await adapter.appendLog('s', 'r', [record(1)], { durability: 'group' });
    counting.counts.datasync = 0;
    const appends = Array.from({ length: 50 }, (_, index) =>
      adapter.appendLog('s', 'r', [record(2 + index)], { durability: 'group' }),
    );
    expect(await Promise.all(appends)).toEqual(appends.map(() => ({ ok: true })));
    expect(counting.counts.datasync).toBeLessThanOrEqual(3);
    expect(
      (await adapter.readLog('s', 'r', { afterSequence: 0, limit: 100 })).records,
    ).toHaveLength(51);
  });

  it('E2: group-committed appends survive a power loss once resolved; unresolved ones never corrupt', async () => {
    const disk = faultInjectingFileSystem();
    const { adapter } = await openSimulated(disk);
    let lastDurable = 0;
    const appends = Array.from({ length: 31 }, (_, index) => {
      const durability = index % 3 === 0 ? 'none' : 'group';
      return adapter.appendLog('s', 'r', [record(index + 1)], { durability }).then(() => {
        if (durability === 'group') lastDurable = Math.max(lastDurable, index + 1);
      });
    });
    await Promise.all(appends);
    expect(lastDurable).toBe(30);
    disk.simulatePowerLoss({ tornTails: true });
    const restarted = fsAdapter({ directory: '/store', fileSystem: disk });
    await restarted.open();
    const read = await restarted.readLog('s', 'r', { afterSequence: 0, limit: 100 });
    const sequences = read.records.map((entry) => entry.sequence);
    expect(sequences).toEqual(Array.from({ length: sequences.length }, (_, index) => index + 1));
    expect(sequences.length).toBeGreaterThanOrEqual(lastDurable);
    await restarted.close();
  });

  it('E2: durability each flushes every append; none flushes nothing', async () => {
    const counting = countingFileSystem(nodeFileSystem);
    const adapter = await openAdapter({ fileSystem: counting.fileSystem });
    await adapter.appendLog('s', 'r', [record(1)], { durability: 'each' });
    counting.counts.datasync = 0;
    counting.counts.sync = 0;
    await Promise.all(
      Array.from({ length: 10 }, (_, index) =>
        adapter.appendLog('s', 'r', [record(2 + index)], { durability: 'each' }),
      ),
    );
    expect(counting.counts.datasync).toBe(10);
    counting.counts.datasync = 0;
    await Promise.all(
      Array.from({ length: 10 }, (_, index) =>
        adapter.appendLog('s', 'r', [record(12 + index)], { durability: 'none' }),
      ),
    );
    expect(counting.counts.datasync + counting.counts.sync).toBe(0);
  });

  it('E2: a batch holds at most journalBatchBytes, so a large event does not carry small ones with it', async () => {
    const { adapter, disk } = await openSimulated(undefined, { journalBatchBytes: 4096 });
    await adapter.appendLog('s', 'r', [record(1)], { durability: 'none' });
    const writesBefore = disk.counts.write;
    const large = { sequence: 2, text: JSON.stringify('x'.repeat(10_000)) };
    const appends = [
      adapter.appendLog('s', 'r', [large], { durability: 'none' }),
      ...Array.from({ length: 20 }, (_, index) =>
        adapter.appendLog('s', 'r', [record(3 + index)], { durability: 'none' }),
      ),
    ];
    await Promise.all(appends);
    // The large event is a batch of its own; the small ones follow in one batch under 4 KiB.
    expect(disk.counts.write - writesBefore).toBe(2);
    const read = await adapter.readLog('s', 'r', { afterSequence: 0, limit: 100 });
    expect(read.records.map((entry) => entry.sequence)).toEqual(
      Array.from({ length: 22 }, (_, index) => index + 1),
    );
  });

  it('B8: deleteLogs removes every journal of the session; a new journal starts at 1', async () => {
    const adapter = await openAdapter();
    await adapter.appendLog('s', 'r1', records(1, 3), { durability: 'none' });
    await adapter.appendLog('s', 'R1', records(1, 1), { durability: 'none' });
    await adapter.appendLog('other', 'r1', records(1, 1), { durability: 'none' });
    expect(await adapter.listLogs('s')).toEqual(['R1', 'r1']);
    await adapter.deleteLogs('s', { durable: true });
    expect(await adapter.listLogs('s')).toEqual([]);
    expect(await adapter.listLogs('other')).toEqual(['r1']);
    expect((await adapter.readLog('s', 'r1', { afterSequence: 0, limit: 10 })).exists).toBe(false);
    expect(await adapter.appendLog('s', 'r1', [record(2)], { durability: 'none' })).toEqual({
      ok: false,
      lastSequence: 0,
    });
    expect(await adapter.appendLog('s', 'r1', [record(1)], { durability: 'none' })).toEqual({
      ok: true,
    });
    await adapter.deleteLogs('never-used', { durable: true });
  });

  it("B8: deleteLog removes one run's journal, group frames included; the others stay, nothing replays it", async () => {
    const disk = faultInjectingFileSystem();
    const { adapter } = await openSimulated(disk);
    await adapter.appendLog('s', 'gone', [record(1)], { durability: 'group' });
    await adapter.appendLog('s', 'gone', records(2, 2), { durability: 'group' });
    await adapter.appendLog('s', 'kept', records(1, 2), { durability: 'group' });
    await adapter.deleteLog('s', 'gone', { durable: true });
    await adapter.deleteLog('s', 'never-written', { durable: true });
    expect(await adapter.listLogs('s')).toEqual(['kept']);
    expect((await adapter.readLog('s', 'gone', { afterSequence: 0, limit: 10 })).exists).toBe(
      false,
    );
    // Records 2 and 3 of "gone" were only in the group-commit log: a replay must skip them.
    disk.simulatePowerLoss();
    const restarted = fsAdapter({ directory: '/store', fileSystem: disk });
    await restarted.open();
    expect(await restarted.listLogs('s')).toEqual(['kept']);
    expect((await restarted.readLog('s', 'kept', { afterSequence: 0, limit: 10 })).records).toEqual(
      records(1, 2),
    );
    await restarted.close();
  });

  it('E2: an append whose flush fails is rejected with a BackendError and leaves no partial record', async () => {
    for (const [durability, failing] of [
      ['each', '.journal'],
      ['group', '/wal/'],
    ] as const) {
      const { adapter, disk } = await openSimulated();
      await adapter.appendLog('s', 'r', [record(1)], { durability: 'group' });
      disk.inject({ operation: 'datasync', path: failing, code: 'EIO', times: 1 });
      await expect(adapter.appendLog('s', 'r', [record(2)], { durability })).rejects.toSatisfy(
        BackendError.isInstance,
      );
      // The record had reached the file; it was cut off again, so it never shows up as landed.
      expect(await adapter.readLog('s', 'r', { afterSequence: 0, limit: 10 })).toEqual({
        exists: true,
        records: [record(1)],
        tornTail: false,
      });
      // After a log failure, group appends flush their journal instead.
      expect(await adapter.appendLog('s', 'r', [record(2)], { durability: 'group' })).toEqual({
        ok: true,
      });
      disk.simulatePowerLoss();
      const restarted = fsAdapter({ directory: '/store', fileSystem: disk });
      await restarted.open();
      expect((await restarted.readLog('s', 'r', { afterSequence: 0, limit: 10 })).records).toEqual(
        records(1, 2),
      );
      await restarted.close();
    }
  });

  it('E2: a stream keeps its journal across a gap between tokens, and lets go once idle', async () => {
    const { adapter, disk } = await openSimulated();
    const group = { durability: 'group' } as const;
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    await adapter.appendLog('s', 'r', [record(1)], group);
    await adapter.appendLog('s', 'r', [record(2)], group);
    // Taking the journal again is a lock file (a symlink) and an open of the journal.
    const lockCalls = () => disk.counts.symlink + disk.counts.open;
    const held = lockCalls();
    // 40 ms: a gap between two tokens of a slow model. The lock and the open file stay.
    await sleep(40);
    await adapter.appendLog('s', 'r', [record(3)], group);
    expect(lockCalls()).toBe(held);
    // Idle past the hold: the lock is let go, and the next append takes it again.
    await sleep(600);
    const released = lockCalls();
    await adapter.appendLog('s', 'r', [record(4)], group);
    expect(lockCalls()).toBeGreaterThan(released);
    expect((await adapter.readLog('s', 'r', { afterSequence: 0, limit: 10 })).records).toEqual(
      records(1, 4),
    );
  });

  it('E2: a writer that went quiet right after an append still lets another writer in on its next look, before it has idled IDLE_MS (fake clock)', async () => {
    // The clock is the test's: how loaded the machine is changes nothing below.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    try {
      const disk = faultInjectingFileSystem();
      const { adapter: first } = await openSimulated(disk);
      const { adapter: second } = await openSimulated(disk);
      const group = { durability: 'group' } as const;
      // The first writer takes the journal (and looks for waiters), appends again 200 ms on
      // without looking (not due yet), then goes quiet.
      await first.appendLog('s', 'r', [record(1)], group);
      await vi.advanceTimersByTimeAsync(200);
      await first.appendLog('s', 'r', [record(2)], group);
      const quietSince = Date.now();
      let enteredAfter: number | null = null;
      const entered = second.appendLog('s', 'r', [record(3)], group).then((result) => {
        enteredAfter = Date.now() - quietSince;
        return result;
      });
      // Millisecond by millisecond until the second writer is in, or the first has been
      // quiet for twice IDLE_MS (long after it would have let go by idling alone).
      while (enteredAfter === null && Date.now() - quietSince < 2 * IDLE_MS) {
        await vi.advanceTimersByTimeAsync(1);
      }
      expect(await entered).toEqual({ ok: true });
      // Its next look falls due about 50 ms after it went quiet and finds the second
      // writer's wait mark: the second gets in then, before the first would have let go
      // for idling IDLE_MS. A writer that only let go once idle lets it in at IDLE_MS or later.
      expect(enteredAfter).not.toBeNull();
      expect(enteredAfter as unknown as number).toBeLessThan(IDLE_MS);
      const read = await second.readLog('s', 'r', { afterSequence: 0, limit: 10 });
      expect(read.records.map((entry) => entry.sequence)).toEqual([1, 2, 3]);
    } finally {
      vi.useRealTimers();
    }
  });

  it('E2: a look for waiters that fails lets go of the journal instead of keeping it (fault injection)', async () => {
    const { adapter, disk } = await openSimulated();
    const group = { durability: 'group' } as const;
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    await adapter.appendLog('s', 'r', [record(1)], group);
    disk.inject({ operation: 'lstat', path: '.wait', code: 'EIO' });
    // An append 150 ms on, then quiet: the look falls due (250 ms after the last) before the
    // writer has idled 250 ms. The look fails; the writer lets go rather than hold on.
    await sleep(150);
    await adapter.appendLog('s', 'r', [record(2)], group);
    const looks = disk.counts.lstat;
    await sleep(180);
    expect(disk.counts.lstat).toBeGreaterThan(looks);
    const taken = disk.counts.symlink;
    await adapter.appendLog('s', 'r', [record(3)], group);
    expect(disk.counts.symlink).toBeGreaterThan(taken);
    // Busy past a look: the look after a batch fails too, and nothing is left unhandled.
    for (let sequence = 4; sequence <= 7; sequence++) {
      await sleep(90);
      expect(await adapter.appendLog('s', 'r', [record(sequence)], group)).toEqual({ ok: true });
    }
    disk.clearFaults();
    expect((await adapter.readLog('s', 'r', { afterSequence: 0, limit: 10 })).records).toEqual(
      records(1, 7),
    );
  });

  it('E2: a streamed append whose log flush fails is rejected and not counted; the journal takes over', async () => {
    const { adapter, disk } = await openSimulated();
    await adapter.appendLog('s', 'r', [record(1)], { durability: 'group' });
    await adapter.appendLog('s', 'r', [record(2)], { durability: 'group' });
    // A turn later the writer is idle but still holds the journal: the streaming case.
    await new Promise((resolve) => setImmediate(resolve));
    disk.inject({ operation: 'datasync', path: '/wal/', code: 'EIO', times: 1 });
    await expect(
      adapter.appendLog('s', 'r', [record(3)], { durability: 'group' }),
    ).rejects.toSatisfy(BackendError.isInstance);
    expect((await adapter.readLog('s', 'r', { afterSequence: 0, limit: 10 })).records).toEqual(
      records(1, 2),
    );
    expect(await adapter.appendLog('s', 'r', [record(3)], { durability: 'group' })).toEqual({
      ok: true,
    });
    disk.simulatePowerLoss();
    const restarted = fsAdapter({ directory: '/store', fileSystem: disk });
    await restarted.open();
    expect((await restarted.readLog('s', 'r', { afterSequence: 0, limit: 10 })).records).toEqual(
      records(1, 3),
    );
    await restarted.close();
  });

  it('E2: after a power loss the log replays acknowledged appends, never into a deleted or re-created journal', async () => {
    const disk = faultInjectingFileSystem();
    const { adapter } = await openSimulated(disk);
    for (const session of ['kept', 'gone', 'again']) {
      await adapter.appendLog(session, 'r', [record(1)], { durability: 'group' });
      await adapter.appendLog(session, 'r', records(2, 2), { durability: 'group' });
    }
    await adapter.deleteLogs('gone', { durable: true });
    await adapter.deleteLogs('again', { durable: true });
    await adapter.appendLog('again', 'r', [record(1)], { durability: 'group' });
    expect((await disk.readdir('/store/wal')).length).toBe(1);
    // Only the log was flushed for records 2 and 3: without replay, the journal loses them.
    disk.simulatePowerLoss();
    const restarted = fsAdapter({ directory: '/store', fileSystem: disk });
    await restarted.open();
    const read = (session: string) =>
      restarted.readLog(session, 'r', { afterSequence: 0, limit: 10 });
    expect((await read('kept')).records).toEqual(records(1, 3));
    expect((await read('gone')).exists).toBe(false);
    expect((await read('again')).records).toEqual([record(1)]);
    expect(await disk.readdir('/store/wal')).toEqual([]);
    await restarted.close();
  });

  it('E2: the log of a live adapter is never replayed by another; close retires it', async () => {
    const disk = faultInjectingFileSystem();
    const { adapter } = await openSimulated(disk);
    await adapter.appendLog('s', 'r', [record(1)], { durability: 'group' });
    await adapter.appendLog('s', 'r', [record(2)], { durability: 'group' });
    const [log] = await disk.readdir('/store/wal');
    const other = fsAdapter({ directory: '/store', fileSystem: disk });
    await other.open();
    expect(await disk.readdir('/store/wal')).toEqual([log]);
    await adapter.close();
    expect(await disk.readdir('/store/wal')).toEqual([]);
    // Closing flushed the journal itself: a power loss now keeps every record.
    disk.simulatePowerLoss();
    const restarted = fsAdapter({ directory: '/store', fileSystem: disk });
    await restarted.open();
    expect((await restarted.readLog('s', 'r', { afterSequence: 0, limit: 10 })).records).toEqual(
      records(1, 2),
    );
    await Promise.all([other.close(), restarted.close()]);
  });
});
