import { describe, expect, it } from 'vitest';
import { faultInjectingFileSystem } from '../src/testing/index.js';
import { delta, full, openAdapter, openSimulated } from './helpers.js';

// A write that follows a read of the same document (a load that repairs the session, F1)
// starts from what the read learned of the files, checked with two stats, instead of
// reading the base's header and the deltas again (document-store.ts, segmented-file.ts).

const create = { expectedRevision: null, durable: false } as const;
const expecting = (expectedRevision: number) => ({ expectedRevision, durable: false });

/** Longer than a lease's idle time (20 ms), so the next write takes the lock afresh. */
const LEASE_LET_GO_MS = 120;
const letLeaseGo = () => new Promise((resolve) => setTimeout(resolve, LEASE_LET_GO_MS));

describe('a write after a read', () => {
  it('B4: reads neither the base nor the deltas again when nothing changed since the read (fault injection)', async () => {
    const disk = faultInjectingFileSystem();
    const { adapter } = await openSimulated(disk);
    await adapter.putDocument('sessions', 's', full(1, '"base"'), create);
    await adapter.putDocument('sessions', 's', delta(2, '"d2"'), expecting(1));
    await letLeaseGo();
    expect((await adapter.getDocument('sessions', 's'))?.revision).toBe(2);
    const readsBefore = disk.counts.readFile + disk.counts.read;
    expect(
      await adapter.putDocument('sessions', 's', delta(3, '"d3"'), expecting(2)),
    ).toMatchObject({ ok: true });
    expect(disk.counts.readFile + disk.counts.read - readsBefore).toBe(0);
    expect(await adapter.getDocument('sessions', 's')).toMatchObject({
      revision: 3,
      deltas: ['"d2"', '"d3"'],
    });
  });

  it('B4: a write by another adapter since the read is never missed: a delta, a full write, a delete', async () => {
    const reader = await openAdapter();
    const writer = await openAdapter({ directory: reader.directory });
    await reader.putDocument('sessions', 'a', full(1, '"base"'), create);
    await reader.putDocument('sessions', 'b', full(1, '"base"'), create);
    await reader.putDocument('sessions', 'c', full(1, '"base"'), create);
    await letLeaseGo();
    for (const id of ['a', 'b', 'c']) await reader.getDocument('sessions', id);
    // Another process's writes, after the reads, before the reader's writes.
    await writer.putDocument('sessions', 'a', delta(2, '"theirs"'), expecting(1));
    await writer.putDocument('sessions', 'b', full(2, '"theirs"'), expecting(1));
    await writer.deleteDocument('sessions', 'c', { expectedRevision: 1, durable: false });
    await letLeaseGo();
    expect(await reader.putDocument('sessions', 'a', delta(2, '"mine"'), expecting(1))).toEqual({
      ok: false,
      currentRevision: 2,
    });
    expect(await reader.putDocument('sessions', 'b', delta(2, '"mine"'), expecting(1))).toEqual({
      ok: false,
      currentRevision: 2,
    });
    expect(await reader.putDocument('sessions', 'c', delta(2, '"mine"'), expecting(1))).toEqual({
      ok: false,
      currentRevision: null,
    });
    expect(await reader.getDocument('sessions', 'a')).toMatchObject({
      revision: 2,
      deltas: ['"theirs"'],
    });
    expect(await reader.getDocument('sessions', 'b')).toMatchObject({
      revision: 2,
      base: '"theirs"',
    });
    expect(await reader.getDocument('sessions', 'c')).toBeNull();
  });
});
