import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { s3Adapter } from '../src/index.js';
import { KeyLayout } from '../src/keys.js';
import { openStore, type S3Fixture, startFixture, userMessage } from './helpers/s3-fixture.js';

/**
 * Journals as segment objects on a real RGW: a segment damaged or removed out of band is
 * reported (E3) and never stops the run; the batch window writes appends of durability
 * `none` together, one PUT per window, and makes them visible to this adapter's reads at once.
 */
let fixture: S3Fixture;
beforeAll(async () => {
  fixture = await startFixture();
});
afterAll(async () => {
  await fixture?.dispose();
});

const record = (sequence: number) => ({ sequence, text: JSON.stringify({ sequence }) });

describe('journal segments', () => {
  it('E3: a damaged last segment is a torn tail: skipped, and the next append goes after it', async () => {
    const options = fixture.options('torn');
    const adapter = s3Adapter(options);
    const keys = new KeyLayout(options.prefix!);
    const append = (records: ReturnType<typeof record>[]) =>
      adapter.appendLog('s', 'r', records, { durability: 'each' });
    expect(await append([record(1), record(2)])).toEqual({ ok: true });
    expect(await append([record(3), record(4)])).toEqual({ ok: true });
    // Out of band: the last segment's bytes are cut short (its metadata stays).
    const key = keys.segment('s', 'r', 3);
    const stored = await fixture.raw.get(key, 'test');
    await fixture.raw.put(key, stored!.body.slice(0, -5), { ...stored!.metadata }, 'test');
    const read = await adapter.readLog('s', 'r', { afterSequence: 0, limit: 100 });
    expect(read.tornTail).toBe(true);
    expect(read.records.map((entry) => entry.sequence)).toEqual([1, 2]);
    // A writer that read the journal appends at 3: refused with the last sequence stored.
    const reader = s3Adapter(options);
    expect(await reader.appendLog('s', 'r', [record(3)], { durability: 'each' })).toEqual({
      ok: false,
      lastSequence: 4,
    });
    expect(await reader.appendLog('s', 'r', [record(5)], { durability: 'each' })).toEqual({
      ok: true,
    });
    const after = await reader.readLog('s', 'r', { afterSequence: 0, limit: 100 });
    expect(after.tornTail).toBe(false);
    expect(after.records.map((entry) => entry.sequence)).toEqual([1, 2, 5]);
    await adapter.close();
    await reader.close();
  });

  it('E3: a segment removed out of band is a gap the store reports, and the run goes on', async () => {
    const options = fixture.options('gap');
    const { store, close } = openStore(options, { journal: { durability: 'each' } });
    const session = await store.create({ title: 'gap' }, { fsync: true });
    const run = await store.beginRun(session.id, { userMessage: userMessage('q') });
    for (const text of ['one ', 'two ', 'three '])
      await run.append({ type: 'token', data: { text } });
    await fixture.raw.delete(
      new KeyLayout(options.prefix!).segment(session.id, run.runId, 2),
      'test',
    );
    const journal = await store.readJournal(session.id, run.runId);
    expect(journal.records.map((entry) => entry.sequence)).toEqual([1, 3]);
    expect(journal.gaps).toEqual([{ expected: 2, found: 3 }]);
    expect((await run.append({ type: 'token', data: { text: 'four' } })).sequence).toBe(4);
    await run.complete();
    await close();
  });

  it('batches appends of durability none: one PUT per window, read back at once, flushed by sync', async () => {
    const options = fixture.options('window', { journal: { batchWindowMs: 60_000 } });
    const adapter = s3Adapter(options);
    await adapter.open();
    const from = fixture.faults.seen.length;
    for (let sequence = 1; sequence <= 20; sequence++) {
      expect(await adapter.appendLog('s', 'r', [record(sequence)], { durability: 'none' })).toEqual(
        { ok: true },
      );
    }
    // Acknowledged, but not written yet: another adapter does not see them.
    expect(fixture.faults.count('PutObjectCommand', from)).toBe(0);
    const other = s3Adapter(options);
    expect((await other.readLog('s', 'r', { afterSequence: 0, limit: 100 })).exists).toBe(false);
    // A sequence that is not next is refused against what waits, too.
    expect(await adapter.appendLog('s', 'r', [record(20)], { durability: 'none' })).toEqual({
      ok: false,
      lastSequence: 20,
    });
    // This adapter's own read writes the batch first: one PUT for the 20 records.
    const read = await adapter.readLog('s', 'r', { afterSequence: 0, limit: 100 });
    expect(read.records.map((entry) => entry.sequence)).toEqual(
      Array.from({ length: 20 }, (_, index) => index + 1),
    );
    expect(fixture.faults.count('PutObjectCommand', from)).toBe(1);
    // A durable append writes what waits with it, in one PUT.
    await adapter.appendLog('s', 'r', [record(21)], { durability: 'none' });
    await adapter.appendLog('s', 'r', [record(22)], { durability: 'group' });
    expect(fixture.faults.count('PutObjectCommand', from)).toBe(2);
    await adapter.appendLog('s', 'r', [record(23)], { durability: 'none' });
    await adapter.sync();
    expect(fixture.faults.count('PutObjectCommand', from)).toBe(3);
    const seen = await other.readLog('s', 'r', { afterSequence: 20, limit: 100 });
    expect(seen.records.map((entry) => entry.sequence)).toEqual([21, 22, 23]);
    await adapter.close();
    await other.close();
  });

  it('a batch window writes on its own once the window ends, and close() writes what waits', async () => {
    const options = fixture.options('timer', { journal: { batchWindowMs: 50 } });
    const adapter = s3Adapter(options);
    await adapter.appendLog('s', 'r', [record(1)], { durability: 'none' });
    await adapter.appendLog('s', 'r', [record(2)], { durability: 'none' });
    const other = s3Adapter(options);
    let read = await other.readLog('s', 'r', { afterSequence: 0, limit: 10 });
    for (let polls = 0; read.records.length < 2 && polls < 200; polls++) {
      await new Promise((resolve) => setTimeout(resolve, 25));
      read = await other.readLog('s', 'r', { afterSequence: 0, limit: 10 });
    }
    expect(read.records.map((entry) => entry.sequence)).toEqual([1, 2]);
    await adapter.appendLog('s', 'r', [record(3)], { durability: 'none' });
    await adapter.close();
    read = await other.readLog('s', 'r', { afterSequence: 0, limit: 10 });
    expect(read.records.map((entry) => entry.sequence)).toEqual([1, 2, 3]);
    await other.close();
  });

  it('reads from a sequence inside a segment, and a long journal page by page', async () => {
    const adapter = s3Adapter(fixture.options('pages'));
    const records = Array.from({ length: 30 }, (_, index) => record(index + 1));
    for (let start = 0; start < records.length; start += 3) {
      expect(
        await adapter.appendLog('s', 'r', records.slice(start, start + 3), { durability: 'each' }),
      ).toEqual({ ok: true });
    }
    const inside = await adapter.readLog('s', 'r', { afterSequence: 4, limit: 4 });
    expect(inside.records.map((entry) => entry.sequence)).toEqual([5, 6, 7, 8]);
    const atBoundary = await adapter.readLog('s', 'r', { afterSequence: 27, limit: 100 });
    expect(atBoundary.records.map((entry) => entry.sequence)).toEqual([28, 29, 30]);
    const past = await adapter.readLog('s', 'r', { afterSequence: 30, limit: 100 });
    expect(past).toEqual({ exists: true, records: [], tornTail: false });
    expect(await adapter.listLogs('s')).toEqual(['r']);
    await adapter.deleteLog('s', 'r', { durable: true });
    expect((await adapter.readLog('s', 'r', { afterSequence: 0, limit: 1 })).exists).toBe(false);
    await adapter.close();
  });
});
