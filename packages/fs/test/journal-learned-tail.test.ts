import { describe, expect, it } from 'vitest';
import { faultInjectingFileSystem } from '../src/testing/index.js';
import { openSimulated } from './helpers.js';

// A read of a journal on a local disk learns its tail (journal-store.ts), so the append that
// follows it (a recovery's crash record, F3) takes the journal over with one stat instead of
// reading and parsing the file again; a journal changed since is read afresh.

const record = (sequence: number) => ({ sequence, text: JSON.stringify({ sequence }) });
const each = { durability: 'each' } as const;
const none = { durability: 'none' } as const;
const everything = { afterSequence: 0, limit: 100 };
const sequencesOf = (read: { records: ReadonlyArray<{ sequence: number }> }) =>
  read.records.map((entry) => entry.sequence);

describe('a journal append after a read', () => {
  it('E2: takes the journal over from what the read learned, without reading it again (fault injection)', async () => {
    const disk = faultInjectingFileSystem();
    const { adapter: writer } = await openSimulated(disk);
    for (const sequence of [1, 2, 3]) {
      expect(await writer.appendLog('s', 'r', [record(sequence)], each)).toEqual({ ok: true });
    }
    await writer.close();
    const { adapter } = await openSimulated(disk);
    expect(sequencesOf(await adapter.readLog('s', 'r', everything))).toEqual([1, 2, 3]);
    const readsBefore = disk.counts.read + disk.counts.readFile;
    expect(await adapter.appendLog('s', 'r', [record(4)], none)).toEqual({ ok: true });
    expect(disk.counts.read + disk.counts.readFile - readsBefore).toBe(0);
    expect(sequencesOf(await adapter.readLog('s', 'r', everything))).toEqual([1, 2, 3, 4]);
  });

  it('E2: an append by another adapter after the read is never missed: the sequence check refuses, the next append goes after it (fault injection)', async () => {
    const disk = faultInjectingFileSystem();
    const { adapter: first } = await openSimulated(disk);
    expect(await first.appendLog('s', 'r', [record(1)], each)).toEqual({ ok: true });
    await first.close();
    const { adapter } = await openSimulated(disk);
    expect(sequencesOf(await adapter.readLog('s', 'r', everything))).toEqual([1]);
    // Another process appends between this adapter's read and its append.
    const { adapter: other } = await openSimulated(disk);
    expect(await other.appendLog('s', 'r', [record(2)], each)).toEqual({ ok: true });
    await other.close();
    expect(await adapter.appendLog('s', 'r', [record(2)], none)).toEqual({
      ok: false,
      lastSequence: 2,
    });
    expect(await adapter.appendLog('s', 'r', [record(3)], none)).toEqual({ ok: true });
    expect(sequencesOf(await adapter.readLog('s', 'r', everything))).toEqual([1, 2, 3]);
  });
});
