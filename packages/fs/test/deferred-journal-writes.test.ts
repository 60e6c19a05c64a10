import { BackendError } from '@keepsake/core';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { fsAdapter } from '../src/index.js';
import { parseJournal } from '../src/journal-format.js';
import { countingFileSystem, faultInjectingFileSystem } from '../src/testing/index.js';

const record = (sequence: number) => ({ sequence, text: JSON.stringify({ sequence }) });
const records = (from: number, count: number) =>
  Array.from({ length: count }, (_, index) => record(from + index));
const group = { durability: 'group' } as const;
const everything = { afterSequence: 0, limit: 1000 };

/** The journal file of session `s`, run `r` under /store, as stored on the simulated disk. */
function journalOnDisk(disk: ReturnType<typeof faultInjectingFileSystem>) {
  const path = '/store/journals/s=/r=.journal';
  const bytes = disk.peek(path);
  return bytes === null ? null : parseJournal(bytes);
}

describe('group-committed journal writes', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('E2: a durable group append costs a log write, not a journal write; the journal gets them in bulk', async () => {
    // Timers are held still, so nothing is written to the journal behind the test's back.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const disk = faultInjectingFileSystem();
    const { fileSystem, counts } = countingFileSystem(disk);
    const adapter = fsAdapter({ directory: '/store', fileSystem });
    await adapter.open();
    // The first append creates the journal and flushes it (its header must be durable).
    await adapter.appendLog('s', 'r', [record(1)], group);
    for (let sequence = 2; sequence <= 40; sequence++) {
      expect(await adapter.appendLog('s', 'r', [record(sequence)], group)).toEqual({ ok: true });
    }
    const journalWrites = () => counts.writesByPath.get('/store/journals/s=/r=.journal') ?? 0;
    expect(journalWrites()).toBe(1);
    expect(journalOnDisk(disk)?.lastSequence).toBe(1);
    // Readers in this process, through any adapter, already see every durable append.
    const reader = fsAdapter({ directory: '/store', fileSystem });
    await reader.open();
    expect((await reader.readLog('s', 'r', everything)).records).toEqual(records(1, 40));
    expect((await adapter.readLog('s', 'r', { afterSequence: 38, limit: 1 })).records).toEqual([
      record(39),
    ]);
    // A while later, one write puts them all in the file.
    await vi.advanceTimersByTimeAsync(60);
    await vi.waitFor(() => expect(journalOnDisk(disk)?.lastSequence).toBe(40));
    expect(journalWrites()).toBe(2);
    await Promise.all([adapter.close(), reader.close()]);
  });

  it('C1: sync() writes the waiting appends to the journal and flushes it; the log is retired', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const disk = faultInjectingFileSystem();
    const adapter = fsAdapter({ directory: '/store', fileSystem: disk });
    await adapter.open();
    for (let sequence = 1; sequence <= 5; sequence++) {
      await adapter.appendLog('s', 'r', [record(sequence)], group);
    }
    expect(journalOnDisk(disk)?.lastSequence).toBe(1);
    await adapter.sync();
    expect(journalOnDisk(disk)?.lastSequence).toBe(5);
    // Durable in the journal itself: a power loss keeps all five without any replay.
    await adapter.close();
    expect(await disk.readdir('/store/wal')).toEqual([]);
    disk.simulatePowerLoss();
    expect(journalOnDisk(disk)?.lastSequence).toBe(5);
  });

  it('E2: when the journal cannot be written, close reports it and keeps the log; the next open replays it', async () => {
    const disk = faultInjectingFileSystem();
    const adapter = fsAdapter({ directory: '/store', fileSystem: disk });
    await adapter.open();
    await adapter.appendLog('s', 'r', [record(1)], { durability: 'each' });
    disk.inject({ operation: 'write', path: '.journal', code: 'EIO' });
    for (let sequence = 2; sequence <= 4; sequence++) {
      expect(await adapter.appendLog('s', 'r', [record(sequence)], group)).toEqual({ ok: true });
    }
    await expect(adapter.close()).rejects.toSatisfy(BackendError.isInstance);
    expect(journalOnDisk(disk)?.lastSequence).toBe(1);
    expect((await disk.readdir('/store/wal')).length).toBe(1);
    disk.clearFaults();
    const restarted = fsAdapter({ directory: '/store', fileSystem: disk });
    await restarted.open();
    expect((await restarted.readLog('s', 'r', everything)).records).toEqual(records(1, 4));
    expect(journalOnDisk(disk)?.lastSequence).toBe(4);
    expect(await disk.readdir('/store/wal')).toEqual([]);
    await restarted.close();
  });
});
