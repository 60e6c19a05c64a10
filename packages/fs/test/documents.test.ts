import { chmod, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { BackendError, type StorageAdapter } from '@keepsake/core';
import { describe, expect, it } from 'vitest';
import { encodeId, fsAdapter } from '../src/index.js';
import { faultInjectingFileSystem } from '../src/testing/index.js';
import { delta, full, openAdapter, openSimulated } from './helpers.js';

const create = { expectedRevision: null, durable: false } as const;

describe('documents', () => {
  it('B4: a write is conditional on the stored revision; null means it must not exist', async () => {
    const adapter = await openAdapter();
    expect(await adapter.putDocument('sessions', 's', full(1, '"a"'), create)).toEqual({
      ok: true,
    });
    expect(await adapter.putDocument('sessions', 's', full(1, '"b"'), create)).toEqual({
      ok: false,
      currentRevision: 1,
    });
    expect(
      await adapter.putDocument('sessions', 's', full(3, '"c"'), {
        expectedRevision: 2,
        durable: false,
      }),
    ).toEqual({ ok: false, currentRevision: 1 });
    expect(
      await adapter.putDocument('sessions', 'missing', full(2, '"c"'), {
        expectedRevision: 1,
        durable: false,
      }),
    ).toEqual({ ok: false, currentRevision: null });
    expect(await adapter.getDocument('sessions', 's')).toEqual({
      revision: 1,
      base: '"a"',
      deltas: [],
    });
    // A refused write to a missing document leaves nothing behind to list.
    expect((await adapter.listDocuments('sessions', { cursor: null, limit: 10 })).ids).toEqual([
      's',
    ]);
  });

  it('appends deltas to the base, and a full write replaces the base and drops the deltas', async () => {
    const adapter = await openAdapter();
    await adapter.putDocument('sessions', 's', full(1, '"base"'), create);
    for (let revision = 2; revision <= 5; revision++) {
      const result = await adapter.putDocument('sessions', 's', delta(revision, `"d${revision}"`), {
        expectedRevision: revision - 1,
        durable: revision % 2 === 0,
      });
      expect(result).toEqual({ ok: true });
    }
    expect(await adapter.getDocument('sessions', 's')).toEqual({
      revision: 5,
      base: '"base"',
      deltas: ['"d2"', '"d3"', '"d4"', '"d5"'],
    });
    expect(
      await adapter.putDocument('sessions', 's', delta(6, '"late"'), {
        expectedRevision: 4,
        durable: false,
      }),
    ).toEqual({ ok: false, currentRevision: 5 });
    await adapter.putDocument('sessions', 's', full(6, '"compacted"'), {
      expectedRevision: 5,
      durable: true,
    });
    expect(await adapter.getDocument('sessions', 's')).toEqual({
      revision: 6,
      base: '"compacted"',
      deltas: [],
    });
    await adapter.putDocument('sessions', 's', delta(7, '"next"'), {
      expectedRevision: 6,
      durable: false,
    });
    expect(await adapter.getDocument('sessions', 's')).toEqual({
      revision: 7,
      base: '"compacted"',
      deltas: ['"next"'],
    });
    expect(await adapter.putDocument('sessions', 'nothing', delta(1, '"x"'), create)).toEqual({
      ok: false,
      currentRevision: null,
    });
  });

  it('an append costs O(delta): the base file is not rewritten', async () => {
    const { adapter, disk } = await openSimulated();
    const big = JSON.stringify('x'.repeat(200_000));
    await adapter.putDocument('sessions', 's', full(1, big), create);
    const writtenBefore = disk.counts.write;
    const base = disk.peek('/store/sessions/s=/document');
    await adapter.putDocument('sessions', 's', delta(2, '"small"'), {
      expectedRevision: 1,
      durable: false,
    });
    expect(disk.peek('/store/sessions/s=/document')).toEqual(base);
    expect(disk.counts.write - writtenBefore).toBeLessThanOrEqual(2);
  });

  it('B1: a compaction interrupted at every step (process crash or power loss) reads as old or new', async () => {
    const oldDocument = { revision: 3, base: '"base"', deltas: ['"d2"', '"d3"'] };
    const newDocument = { revision: 4, base: '"compacted"', deltas: [] };
    const prepare = async () => {
      const disk = faultInjectingFileSystem();
      const { adapter } = await openSimulated(disk);
      await adapter.putDocument('sessions', 's', full(1, '"base"'), {
        expectedRevision: null,
        durable: true,
      });
      await adapter.putDocument('sessions', 's', delta(2, '"d2"'), {
        expectedRevision: 1,
        durable: true,
      });
      await adapter.putDocument('sessions', 's', delta(3, '"d3"'), {
        expectedRevision: 2,
        durable: true,
      });
      return { disk, adapter };
    };
    const compact = (adapter: StorageAdapter, durable: boolean) =>
      adapter.putDocument('sessions', 's', full(4, '"compacted"'), {
        expectedRevision: 3,
        durable,
      });
    // How many mutating calls a whole compaction makes.
    const probe = await prepare();
    const before = probe.disk.mutations;
    await compact(probe.adapter, true);
    const steps = probe.disk.mutations - before;
    expect(steps).toBeGreaterThan(5);
    for (let step = 0; step <= steps; step++) {
      for (const powerLoss of [false, true]) {
        const { disk, adapter } = await prepare();
        disk.haltAfter(step);
        const outcome = await compact(adapter, true).then(
          () => 'done',
          () => 'failed',
        );
        if (powerLoss) disk.simulatePowerLoss({ tornTails: true });
        else disk.resume();
        const restarted = fsAdapter({ directory: '/store', fileSystem: disk });
        await restarted.open();
        const seen = await restarted.getDocument('sessions', 's');
        if (outcome === 'done') expect(seen).toEqual(newDocument);
        else expect([oldDocument, newDocument]).toContainEqual(seen);
        // And the next write works from whatever was read.
        const next = await restarted.putDocument(
          'sessions',
          's',
          delta((seen?.revision ?? 0) + 1, '"after"'),
          {
            expectedRevision: seen?.revision ?? null,
            durable: true,
          },
        );
        expect(next).toEqual({ ok: true });
        await restarted.close();
      }
    }
  });

  it('B8: deltas left by a removed base never apply to a re-created one, even at equal revisions', async () => {
    const adapter = await openAdapter();
    await adapter.putDocument('sessions', 's', full(1, '"first life"'), create);
    await adapter.putDocument('sessions', 's', delta(2, '"old delta"'), {
      expectedRevision: 1,
      durable: false,
    });
    const deltas = join(adapter.directory, 'sessions', 's=', 'deltas');
    const leftover = await readFile(deltas);
    await adapter.deleteDocument('sessions', 's', { durable: false });
    await adapter.putDocument('sessions', 's', full(1, '"second life"'), create);
    // As if a crash had kept the old delta file next to the new base.
    await writeFile(deltas, leftover);
    expect(await adapter.getDocument('sessions', 's')).toEqual({
      revision: 1,
      base: '"second life"',
      deltas: [],
    });
    await adapter.putDocument('sessions', 's', delta(2, '"new delta"'), {
      expectedRevision: 1,
      durable: false,
    });
    expect(await adapter.getDocument('sessions', 's')).toEqual({
      revision: 2,
      base: '"second life"',
      deltas: ['"new delta"'],
    });
  });

  it('E3: a torn delta (crash mid-append) is ignored on read and cut off by the next append', async () => {
    const adapter = await openAdapter();
    await adapter.putDocument('sessions', 's', full(1, '"base"'), create);
    await adapter.putDocument('sessions', 's', delta(2, '"d2"'), {
      expectedRevision: 1,
      durable: false,
    });
    const deltas = join(adapter.directory, 'sessions', 's=', 'deltas');
    const intact = await readFile(deltas);
    await writeFile(deltas, Buffer.concat([intact, intact.subarray(0, intact.length - 3)]));
    expect(await adapter.getDocument('sessions', 's')).toEqual({
      revision: 2,
      base: '"base"',
      deltas: ['"d2"'],
    });
    await adapter.putDocument('sessions', 's', delta(3, '"d3"'), {
      expectedRevision: 2,
      durable: false,
    });
    expect(await adapter.getDocument('sessions', 's')).toEqual({
      revision: 3,
      base: '"base"',
      deltas: ['"d2"', '"d3"'],
    });
  });

  it('E3: a delta append whose write or flush fails is refused and cut off; the next one lands (fault injection)', async () => {
    const { adapter, disk } = await openSimulated();
    await adapter.putDocument('sessions', 's', full(1, '"base"'), create);
    const durable = (expectedRevision: number) => ({ expectedRevision, durable: true });
    await adapter.putDocument('sessions', 's', delta(2, '"d2"'), durable(1));
    // A small delta is written at once, a large one (over 64 KiB) through the thread pool.
    const large = JSON.stringify('x'.repeat(100_000));
    for (const [operation, text] of [
      ['write', '"lost"'],
      ['datasync', '"lost"'],
      ['write', large],
      ['datasync', large],
    ] as const) {
      disk.inject({ operation, path: '/sessions/s=/deltas', code: 'EIO', times: 1 });
      await expect(
        adapter.putDocument('sessions', 's', delta(3, text), durable(2)),
      ).rejects.toSatisfy(BackendError.isInstance);
      expect(await adapter.getDocument('sessions', 's')).toEqual({
        revision: 2,
        base: '"base"',
        deltas: ['"d2"'],
      });
    }
    await adapter.putDocument('sessions', 's', delta(3, '"d3"'), durable(2));
    expect(await adapter.getDocument('sessions', 's')).toEqual({
      revision: 3,
      base: '"base"',
      deltas: ['"d2"', '"d3"'],
    });
  });

  it('A2: a base that fails its checksum is returned as text that does not parse, never as absent', async () => {
    const adapter = await openAdapter();
    await adapter.putDocument('sessions', 's', full(1, '{"title":"ok"}'), create);
    const path = join(adapter.directory, 'sessions', 's=', 'document');
    const bytes = await readFile(path);
    bytes[bytes.length - 3] = 'X'.charCodeAt(0);
    await writeFile(path, bytes);
    const stored = await adapter.getDocument('sessions', 's');
    expect(stored).not.toBeNull();
    expect(() => JSON.parse(stored?.base ?? '')).toThrow();
    await writeFile(path, '');
    expect((await adapter.getDocument('sessions', 's'))?.base).toBe('');
  });

  it('A2: quarantine moves the bytes intact, frees the id and lists the entry', async () => {
    const adapter = await openAdapter();
    await adapter.putDocument('sessions', 'Bad-1', full(1, '{"a":1}'), create);
    await adapter.putDocument('sessions', 'Bad-1', delta(2, '{"b":2}'), {
      expectedRevision: 1,
      durable: false,
    });
    const documentDirectory = join(adapter.directory, 'sessions', encodeId('Bad-1'));
    const baseBytes = await readFile(join(documentDirectory, 'document'));
    const deltaBytes = await readFile(join(documentDirectory, 'deltas'));
    const location = await adapter.quarantineDocument('sessions', 'Bad-1', 'does not parse');
    expect(await readFile(join(location, 'document'))).toEqual(baseBytes);
    expect(await readFile(join(location, 'deltas'))).toEqual(deltaBytes);
    expect(await adapter.getDocument('sessions', 'Bad-1')).toBeNull();
    expect((await adapter.listDocuments('sessions', { cursor: null, limit: 10 })).ids).toEqual([]);
    expect(await adapter.putDocument('sessions', 'Bad-1', full(1, '{}'), create)).toEqual({
      ok: true,
    });
    const quarantined = await adapter.listQuarantined();
    expect(quarantined).toEqual([
      {
        collection: 'sessions',
        id: 'Bad-1',
        location,
        reason: 'does not parse',
        quarantinedAt: expect.any(Number),
      },
    ]);
  });

  it('A2: a read that fails for permission is a BackendError, never "not found"', async () => {
    if (process.getuid?.() === 0) {
      // root ignores file modes; prove the same with an injected EACCES instead.
      const { adapter, disk } = await openSimulated();
      await adapter.putDocument('sessions', 's', full(1, '{}'), create);
      disk.inject({ operation: 'readFile', path: '/sessions/s=/', code: 'EACCES' });
      await expect(adapter.getDocument('sessions', 's')).rejects.toSatisfy(BackendError.isInstance);
      disk.clearFaults();
      disk.inject({ operation: 'readFile', path: '/sessions/s=/', code: 'EIO' });
      await expect(adapter.getDocument('sessions', 's')).rejects.toSatisfy(BackendError.isInstance);
      return;
    }
    const adapter = await openAdapter();
    await adapter.putDocument('sessions', 's', full(1, '{}'), create);
    const path = join(adapter.directory, 'sessions', 's=', 'document');
    await chmod(path, 0);
    await expect(adapter.getDocument('sessions', 's')).rejects.toSatisfy(BackendError.isInstance);
    await chmod(path, 0o600);
  });

  it('B8: delete is conditional when asked and removes the document and its directory', async () => {
    const adapter = await openAdapter();
    await adapter.putDocument('sessions', 's', full(1, '{}'), create);
    expect(
      await adapter.deleteDocument('sessions', 's', { expectedRevision: 2, durable: true }),
    ).toEqual({
      ok: false,
      currentRevision: 1,
    });
    expect(
      await adapter.deleteDocument('sessions', 's', { expectedRevision: 1, durable: true }),
    ).toEqual({
      ok: true,
    });
    expect(await adapter.getDocument('sessions', 's')).toBeNull();
    expect(await adapter.deleteDocument('sessions', 's', { durable: false })).toEqual({ ok: true });
    expect(
      await adapter.deleteDocument('sessions', 's', { expectedRevision: 1, durable: false }),
    ).toEqual({
      ok: false,
      currentRevision: null,
    });
    expect((await adapter.listDocuments('sessions', { cursor: null, limit: 10 })).ids).toEqual([]);
  });

  it('lists document ids in order, by prefix, page by page, never a stray file', async () => {
    const adapter = await openAdapter();
    const ids = ['b', 'A', 'a', 'c-1', 'c_2'];
    for (const id of ids) await adapter.putDocument('sessions', id, full(1, '{}'), create);
    for (const revision of [3, 12, 7]) {
      await adapter.putDocument('revisions', `a.${revision}`, full(1, '{}'), create);
    }
    await adapter.putDocument('revisions', 'ab.1', full(1, '{}'), create);
    await writeFile(join(adapter.directory, 'sessions', 'stray.tmp'), 'x');
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page = await adapter.listDocuments('sessions', { cursor, limit: 2 });
      expect(page.ids.length).toBeLessThanOrEqual(2);
      seen.push(...page.ids);
      cursor = page.nextCursor;
    } while (cursor !== null);
    expect(seen).toEqual([...ids].sort());
    const revisions = await adapter.listDocuments('revisions', {
      prefix: 'a.',
      cursor: null,
      limit: 10,
    });
    expect(revisions.ids).toEqual(['a.12', 'a.3', 'a.7']);
  });
});
