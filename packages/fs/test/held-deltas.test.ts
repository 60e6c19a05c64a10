import { copyFileSync, renameSync, statSync } from 'node:fs';
import { statfs } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BackendError } from '@keepsake/core';
import { describe, expect, it } from 'vitest';
import {
  encodeId,
  type FileHandle,
  type FileSystem,
  nodeFileSystem,
  type OpenFlags,
} from '../src/index.js';
import { isLocalFileSystemType } from '../src/local-disk.js';
import { type FaultInjectingFileSystem, faultInjectingFileSystem } from '../src/testing/index.js';
import { delta, full, openAdapter, openSimulated } from './helpers.js';

// A session saved again and again under one leased lock keeps its delta file open between
// saves (segmented-file.ts), and checks the files with synchronous stats where it can.

const create = { expectedRevision: null, durable: false } as const;
const expecting = (expectedRevision: number, durable = false) => ({ expectedRevision, durable });

/**
 * FAULT INJECTION helper: the simulated disk, with the paths of the handles open right now
 * (an open that fails opens nothing; a close forgets its handle).
 */
function trackedDisk(): {
  disk: FaultInjectingFileSystem;
  fileSystem: FileSystem;
  openPaths: () => string[];
} {
  const disk = faultInjectingFileSystem();
  const open = new Map<FileHandle, string>();
  const fileSystem = new Proxy(disk, {
    get(target, property) {
      if (property === 'open') {
        return async (path: string, flags: OpenFlags) => {
          const handle = await target.open(path, flags);
          const tracked: FileHandle = {
            ...handle,
            close: async () => {
              open.delete(tracked);
              await handle.close();
            },
          };
          open.set(tracked, path);
          return tracked;
        };
      }
      const value = Reflect.get(target, property);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { disk, fileSystem, openPaths: () => [...open.values()] };
}

/** Longer than a lease's idle time (20 ms), so the lease is let go. */
const LEASE_LET_GO_MS = 120;

describe('delta files kept open under a lease', () => {
  it('B1: saves under one lease open the delta file once and close it when the lease is let go (fault injection)', async () => {
    const { disk, fileSystem, openPaths } = trackedDisk();
    const { adapter } = await openSimulated(disk, { fileSystem });
    const deltas = '/store/sessions/s=/deltas';
    await adapter.putDocument('sessions', 's', full(1, '"base"'), create);
    await adapter.putDocument('sessions', 's', delta(2, '"d2"'), expecting(1));
    const opensBefore = disk.counts.open;
    for (let revision = 3; revision <= 22; revision++) {
      await adapter.putDocument(
        'sessions',
        's',
        delta(revision, `"d${revision}"`),
        expecting(revision - 1),
      );
    }
    // One open for the twenty appends (the old code opened and closed the file per append).
    expect(disk.counts.open - opensBefore).toBe(1);
    expect(openPaths()).toContain(deltas);
    await new Promise((resolve) => setTimeout(resolve, LEASE_LET_GO_MS));
    expect(openPaths()).not.toContain(deltas);
    const stored = await adapter.getDocument('sessions', 's');
    expect(stored?.revision).toBe(22);
    expect(stored?.deltas).toHaveLength(21);
  });

  it('closing the adapter closes a delta file a lease still keeps open (fault injection)', async () => {
    const { disk, fileSystem, openPaths } = trackedDisk();
    const { adapter } = await openSimulated(disk, { fileSystem });
    await adapter.putDocument('sessions', 's', full(1, '"base"'), create);
    await adapter.putDocument('sessions', 's', delta(2, '"d2"'), expecting(1));
    await adapter.putDocument('sessions', 's', delta(3, '"d3"'), expecting(2));
    expect(openPaths()).toContain('/store/sessions/s=/deltas');
    await adapter.close();
    expect(openPaths()).toEqual([]);
  });

  it('B1: a delta file replaced by another inode while the lease is held is written through the new one', async () => {
    const adapter = await openAdapter();
    const deltas = join(adapter.directory, 'sessions', encodeId('s'), 'deltas');
    await adapter.putDocument('sessions', 's', full(1, '"base"'), create);
    await adapter.putDocument('sessions', 's', delta(2, '"d2"'), expecting(1));
    await adapter.putDocument('sessions', 's', delta(3, '"d3"'), expecting(2));
    // Same bytes, same size, a new inode (a copy renamed over it, as a backup restore would),
    // synchronously, so the lease is still held for the next save.
    const inodeBefore = statSync(deltas).ino;
    copyFileSync(deltas, `${deltas}.copy`);
    renameSync(`${deltas}.copy`, deltas);
    expect(statSync(deltas).ino).not.toBe(inodeBefore);
    await adapter.putDocument('sessions', 's', delta(4, '"d4"'), expecting(3));
    // Written into the unlinked old inode, "d4" would be lost to every reader.
    expect(await adapter.getDocument('sessions', 's')).toEqual({
      revision: 4,
      base: '"base"',
      deltas: ['"d2"', '"d3"', '"d4"'],
    });
  });

  it('A2: a stat that fails under a held lease refuses the save with a BackendError; the next one lands (fault injection)', async () => {
    const { adapter, disk } = await openSimulated();
    await adapter.putDocument('sessions', 's', full(1, '"base"'), create);
    await adapter.putDocument('sessions', 's', delta(2, '"d2"'), expecting(1, true));
    disk.inject({ operation: 'stat', path: '/sessions/s=/deltas', code: 'EIO', times: 1 });
    await expect(
      adapter.putDocument('sessions', 's', delta(3, '"lost"'), expecting(2, true)),
    ).rejects.toSatisfy(BackendError.isInstance);
    await adapter.putDocument('sessions', 's', delta(3, '"d3"'), expecting(2, true));
    expect(await adapter.getDocument('sessions', 's')).toEqual({
      revision: 3,
      base: '"base"',
      deltas: ['"d2"', '"d3"'],
    });
    expect(disk.counts.stat).toBeGreaterThan(0);
  });

  it('stats are synchronous and delta files kept open only on a local disk: never where isLocalDisk says no or is missing (fault injection)', async () => {
    for (const local of [true, false, undefined]) {
      const { disk, fileSystem: tracked, openPaths } = trackedDisk();
      let synchronousStats = 0;
      const fileSystem = new Proxy(tracked, {
        get(target, property) {
          if (property === 'isLocalDisk') {
            return local === undefined ? undefined : async () => local;
          }
          if (property === 'statSync') {
            return (path: string) => {
              synchronousStats++;
              return disk.statSync(path);
            };
          }
          const value = Reflect.get(target, property);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
      const { adapter } = await openSimulated(disk, { fileSystem });
      await adapter.putDocument('sessions', 's', full(1, '"base"'), create);
      for (let revision = 2; revision <= 6; revision++) {
        await adapter.putDocument(
          'sessions',
          's',
          delta(revision, `"d${revision}"`),
          expecting(revision - 1),
        );
      }
      const keptOpen = openPaths().includes('/store/sessions/s=/deltas');
      expect((await adapter.getDocument('sessions', 's'))?.revision).toBe(6);
      if (local === true) {
        expect(synchronousStats).toBeGreaterThan(0);
        expect(keptOpen).toBe(true);
      } else {
        expect(synchronousStats).toBe(0);
        expect(keptOpen).toBe(false);
      }
    }
  });
});

describe('close() with writes in flight', () => {
  it('C2: waits for writes started before it, so no lock or open file outlives it (fault injection)', async () => {
    const { disk, fileSystem, openPaths } = trackedDisk();
    const { adapter } = await openSimulated(disk, { fileSystem });
    const ids = ['s1', 's2', 's3'];
    for (const id of ids) {
      await adapter.putDocument('sessions', id, full(1, '"base"'), create);
      await adapter.putDocument('sessions', id, delta(2, '"d2"'), expecting(1));
    }
    // Their leases lapse, so each write below takes its lock anew while close() runs.
    await new Promise((resolve) => setTimeout(resolve, LEASE_LET_GO_MS));
    const writes = ids.map((id) =>
      adapter.putDocument('sessions', id, delta(3, '"d3"'), expecting(2)),
    );
    const first = adapter.close();
    // A second close() ends with the first, not while the first still waits for the writes.
    await adapter.close();
    expect(openPaths()).toEqual([]);
    for (const id of ids) {
      await expect(disk.lstat(`/store/sessions/${id}=/lock`)).rejects.toMatchObject({
        code: 'ENOENT',
      });
    }
    await first;
    // The writes had begun: each landed before close() returned.
    const outcomes = await Promise.allSettled(writes);
    expect(outcomes.map((outcome) => outcome.status)).toEqual([
      'fulfilled',
      'fulfilled',
      'fulfilled',
    ]);
  });
});

describe('a lease whose look for waiters fails', () => {
  it('B4: lets go of the lock and closes its delta file; the save goes on (fault injection)', async () => {
    const { disk, fileSystem, openPaths } = trackedDisk();
    const { adapter } = await openSimulated(disk, { fileSystem });
    await adapter.putDocument('sessions', 's', full(1, '"base"'), create);
    await adapter.putDocument('sessions', 's', delta(2, '"d2"'), expecting(1));
    disk.inject({ operation: 'lstat', path: '/sessions/s=/lock.wait', code: 'EIO', times: 1 });
    // Saves for three times the lease's look interval (50 ms), so a look fails.
    let revision = 2;
    const started = Date.now();
    while (Date.now() - started < 150) {
      revision++;
      await adapter.putDocument(
        'sessions',
        's',
        delta(revision, `"d${revision}"`),
        expecting(revision - 1),
      );
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    expect((await adapter.getDocument('sessions', 's'))?.revision).toBe(revision);
    expect(disk.counts.lstat).toBeGreaterThan(0);
    await new Promise((resolve) => setTimeout(resolve, LEASE_LET_GO_MS));
    // The lease was let go: no lock file, no open delta file.
    expect(openPaths()).not.toContain('/store/sessions/s=/deltas');
    await expect(disk.lstat('/store/sessions/s=/lock')).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

describe('isLocalDisk', () => {
  it('knows local filesystem types from network and FUSE ones', () => {
    expect(isLocalFileSystemType(0xef53)).toBe(true); // ext4
    expect(isLocalFileSystemType(0x01021994)).toBe(true); // tmpfs
    expect(isLocalFileSystemType(BigInt(0x58465342))).toBe(true); // xfs, as a bigint
    expect(isLocalFileSystemType(0x6969)).toBe(false); // NFS
    expect(isLocalFileSystemType(0x65735546)).toBe(false); // FUSE (rclone, sshfs)
    expect(isLocalFileSystemType(0xff534d42)).toBe(false); // CIFS
  });

  it('nodeFileSystem answers from statfs on Linux, false elsewhere and for a missing path', async () => {
    const directory = tmpdir();
    const expected =
      process.platform === 'linux' && isLocalFileSystemType((await statfs(directory)).type);
    expect(await nodeFileSystem.isLocalDisk?.(directory)).toBe(expected);
    expect(await nodeFileSystem.isLocalDisk?.(join(directory, 'keepsake-no-such-dir', 'x'))).toBe(
      false,
    );
  });
});
