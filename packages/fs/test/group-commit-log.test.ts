import { describe, expect, it } from 'vitest';
import { fsAdapter } from '../src/index.js';
import { faultInjectingFileSystem } from '../src/testing/index.js';

const group = { durability: 'group' } as const;
const everything = { afterSequence: 0, limit: 10_000 };
/** About 2 KiB per record: a few hundred fill the first log (256 KiB). */
const record = (sequence: number) => ({
  sequence,
  text: JSON.stringify({ sequence, text: 'x'.repeat(2000) }),
});

async function logs(disk: ReturnType<typeof faultInjectingFileSystem>) {
  const names = await disk.readdir('/store/wal').catch(() => [] as string[]);
  return Promise.all(
    names
      .sort()
      .map(async (name) => ({ name, size: (await disk.stat(`/store/wal/${name}`)).size })),
  );
}

describe('the group-commit log', () => {
  it('E2: is preallocated, so flushing an append never changes its size', async () => {
    const disk = faultInjectingFileSystem();
    const adapter = fsAdapter({ directory: '/store', fileSystem: disk });
    await adapter.open();
    // The journal's first append flushes the journal itself; the next ones go to the log.
    await adapter.appendLog('s', 'r', [record(1)], group);
    await adapter.appendLog('s', 'r', [record(2)], group);
    const [first] = await logs(disk);
    expect(first?.size).toBeGreaterThanOrEqual(256 * 1024);
    for (let sequence = 3; sequence <= 40; sequence++) {
      await adapter.appendLog('s', 'r', [record(sequence)], group);
    }
    expect(await logs(disk)).toEqual([first]);
    // What is on disk beyond the entries reads as a torn tail, never as entries: a power
    // loss now replays exactly the acknowledged appends.
    disk.simulatePowerLoss();
    const restarted = fsAdapter({ directory: '/store', fileSystem: disk });
    await restarted.open();
    const read = await restarted.readLog('s', 'r', everything);
    expect(read.records.map((stored) => stored.sequence)).toEqual(
      Array.from({ length: 40 }, (_, index) => index + 1),
    );
    await restarted.close();
  });

  it('E2: a full log gives way to the next, prepared meanwhile and twice the size; close leaves none', async () => {
    const disk = faultInjectingFileSystem();
    const adapter = fsAdapter({ directory: '/store', fileSystem: disk });
    await adapter.open();
    const sizes = new Set<number>();
    for (let sequence = 1; sequence <= 400; sequence++) {
      await adapter.appendLog('s', 'r', [record(sequence)], group);
      for (const log of await logs(disk)) sizes.add(log.size);
    }
    // 400 records of ~2 KiB: the 256 KiB log and the 512 KiB one filled, a 1 MiB one took over.
    const allocated = [...sizes].sort((left, right) => left - right);
    expect(allocated[0]).toBeGreaterThanOrEqual(256 * 1024);
    expect(allocated.at(-1)).toBeGreaterThanOrEqual(4 * (allocated[0] as number));
    disk.simulatePowerLoss();
    const restarted = fsAdapter({ directory: '/store', fileSystem: disk });
    await restarted.open();
    expect((await restarted.readLog('s', 'r', everything)).records).toHaveLength(400);
    await restarted.appendLog('s', 'r', [record(401)], group);
    await restarted.appendLog('s', 'r', [record(402)], group);
    await restarted.close();
    expect(await logs(disk)).toEqual([]);
  });
});
