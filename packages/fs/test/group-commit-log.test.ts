import { BackendError } from '@keepsake/core';
import { describe, expect, it } from 'vitest';
import { type FileHandle, type FileSystem, fsAdapter } from '../src/index.js';
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

/**
 * FAULT INJECTION: once armed, the `failing`-th fdatasync of a group-commit log is held, and
 * fails with EIO (never reaching the disk) a turn after a later fdatasync of the log has
 * succeeded. The test hangs, and fails on its timeout, if no flush starts while one is held.
 */
function heldLogFlushes(disk: FileSystem, failing: number) {
  let armed = false;
  let seen = 0;
  let release: (() => void) | null = null;
  /** Per fdatasync after arming: which open of the log it went through. */
  const handlesUsed: FileHandle[] = [];
  const fileSystem = new Proxy(disk, {
    get(target, key, receiver) {
      if (key !== 'open') return Reflect.get(target, key, receiver);
      return async (path: string, flags: Parameters<FileSystem['open']>[1]) => {
        const handle = await target.open(path, flags);
        if (!path.startsWith('/store/wal/')) return handle;
        const datasync = async () => {
          if (!armed) return handle.datasync();
          seen++;
          handlesUsed.push(handle);
          if (seen === failing) {
            await new Promise<void>((resolve) => {
              release = resolve;
            });
            throw Object.assign(new Error('injected: EIO'), { code: 'EIO' });
          }
          await handle.datasync();
          const held = release;
          if (held !== null) setImmediate(held);
        };
        return Object.assign(Object.create(handle) as FileHandle, { datasync });
      };
    },
  });
  return {
    fileSystem,
    handlesUsed,
    arm() {
      armed = true;
    },
  };
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

  it('E2: when a flush fails, the flush in flight behind it fails too, though its own fdatasync succeeded (fault injection)', async () => {
    const disk = faultInjectingFileSystem();
    // The 2nd log flush after arming fails once the 3rd has succeeded.
    const held = heldLogFlushes(disk, 2);
    const adapter = fsAdapter({ directory: '/store', fileSystem: held.fileSystem });
    await adapter.open();
    const runs = ['a', 'b', 'c', 'd'];
    // First appends go to the journals themselves; the second ones create the log.
    for (const run of runs) await adapter.appendLog('s', run, [record(1)], group);
    await Promise.all(runs.map((run) => adapter.appendLog('s', run, [record(2)], group)));
    held.arm();
    // Record 3: one flush for all four (it passes). Its appends resume in two halves, so
    // record 4 goes out in two flushes in flight at once: the first fails after the second
    // succeeded. The bytes of the second follow the first's in the log, and a replay stops
    // at the first bad frame: none of the four may be reported durable.
    const outcomes = await Promise.all(
      runs.map(async (run) => {
        expect(await adapter.appendLog('s', run, [record(3)], group)).toEqual({ ok: true });
        return adapter.appendLog('s', run, [record(4)], group).then(
          () => 'acknowledged',
          (error: unknown) => (BackendError.isInstance(error) ? 'BackendError' : error),
        );
      }),
    );
    expect(outcomes).toEqual(['BackendError', 'BackendError', 'BackendError', 'BackendError']);
    // The two flushes in flight went through two opens of the log: Linux reports a failed
    // write-back once per open file, so on one handle the later call could take the error
    // and the earlier one return success.
    expect(held.handlesUsed[1]).not.toBe(held.handlesUsed[2]);
    for (const run of runs) {
      const read = await adapter.readLog('s', run, everything);
      expect(read.records.map((stored) => stored.sequence)).toEqual([1, 2, 3]);
    }
    // The log is no longer used; appends go on through the journals.
    expect(await adapter.appendLog('s', 'a', [record(4)], group)).toEqual({ ok: true });
    await adapter.close();
  });

  it('E2: concurrent streams through several full logs: every acknowledged append survives a power loss', async () => {
    const disk = faultInjectingFileSystem();
    const adapter = fsAdapter({ directory: '/store', fileSystem: disk });
    await adapter.open();
    const runs = Array.from({ length: 8 }, (_, index) => `r${index}`);
    // 8 × 60 records of ~2 KiB: the 256 KiB and 512 KiB logs fill and retire while flushes
    // of the next log are in flight, two at a time.
    await Promise.all(
      runs.map(async (run) => {
        for (let sequence = 1; sequence <= 60; sequence++) {
          expect(await adapter.appendLog('s', run, [record(sequence)], group)).toEqual({
            ok: true,
          });
        }
      }),
    );
    disk.simulatePowerLoss();
    const restarted = fsAdapter({ directory: '/store', fileSystem: disk });
    await restarted.open();
    for (const run of runs) {
      const read = await restarted.readLog('s', run, everything);
      expect(read.records.map((stored) => stored.sequence)).toEqual(
        Array.from({ length: 60 }, (_, index) => index + 1),
      );
    }
    await restarted.close();
  });
});
