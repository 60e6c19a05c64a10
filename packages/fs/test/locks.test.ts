import { spawnSync } from 'node:child_process';
import { lutimes, mkdir, symlink, utimes, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { BackendError } from '@keepsake/core';
import { describe, expect, it } from 'vitest';
import { encodeId } from '../src/index.js';
import { countingFileSystem } from '../src/testing/index.js';
import { full, openAdapter, openSimulated } from './helpers.js';

const create = { expectedRevision: null, durable: false } as const;

/** The pid of a process that has exited. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']);
  return Number(child.stdout.toString());
}

async function plantLock(directory: string, id: string, owner: object | null): Promise<string> {
  const documentDirectory = join(directory, 'sessions', encodeId(id));
  await mkdir(documentDirectory, { recursive: true });
  const lock = join(documentDirectory, 'lock');
  if (owner === null) await writeFile(lock, '');
  else await symlink(JSON.stringify(owner), lock);
  return lock;
}

const owner = (
  fields: Partial<{ pid: number; host: string; token: string; createdAt: number }>,
) => ({
  pid: process.pid,
  host: hostname(),
  token: 'feedfacefeedface',
  createdAt: Date.now(),
  ...fields,
});

describe('cross-process locks', () => {
  it('B4: a lock left by a process that died is broken at once', async () => {
    const adapter = await openAdapter({ lockTimeoutMs: 5_000 });
    await plantLock(adapter.directory, 's', owner({ pid: deadPid() }));
    const started = Date.now();
    expect(await adapter.putDocument('sessions', 's', full(1, '{}'), create)).toEqual({ ok: true });
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('B4: a lock this process no longer holds (a crashed store in it) is broken at once', async () => {
    const adapter = await openAdapter({ lockTimeoutMs: 5_000 });
    await plantLock(adapter.directory, 's', owner({}));
    expect(await adapter.putDocument('sessions', 's', full(1, '{}'), create)).toEqual({ ok: true });
  });

  it('B4: a lock written before this machine booted is broken', async () => {
    const adapter = await openAdapter({ lockTimeoutMs: 5_000 });
    await plantLock(adapter.directory, 's', owner({ pid: process.ppid, createdAt: 1_000 }));
    expect(await adapter.putDocument('sessions', 's', full(1, '{}'), create)).toEqual({ ok: true });
  });

  it('B4: a lock held by a live process on this host is never broken: the writer times out', async () => {
    const adapter = await openAdapter({ lockTimeoutMs: 300, lockStaleMs: 100 });
    await plantLock(
      adapter.directory,
      's',
      owner({ pid: process.ppid, createdAt: Date.now() - 60_000 }),
    );
    await expect(adapter.putDocument('sessions', 's', full(1, '{}'), create)).rejects.toSatisfy(
      (error: unknown) => BackendError.isInstance(error) && error.isRetryable,
    );
  });

  it('B4: a lock from another host is stale only after lockStaleMs', async () => {
    const adapter = await openAdapter({ lockTimeoutMs: 300, lockStaleMs: 60_000 });
    const lock = await plantLock(adapter.directory, 's', owner({ host: 'elsewhere', pid: 1 }));
    await expect(adapter.putDocument('sessions', 's', full(1, '{}'), create)).rejects.toSatisfy(
      BackendError.isInstance,
    );
    const longAgo = new Date(Date.now() - 120_000);
    await lutimes(lock, longAgo, longAgo);
    const aged = await openAdapter({ directory: adapter.directory, lockStaleMs: 1_000 });
    expect(await aged.putDocument('sessions', 's', full(1, '{}'), create)).toEqual({ ok: true });
  });

  it('B4: an unreadable lock file is stale once older than two seconds', async () => {
    const adapter = await openAdapter({ lockTimeoutMs: 5_000 });
    const lock = await plantLock(adapter.directory, 's', null);
    const longAgo = new Date(Date.now() - 10_000);
    await utimes(lock, longAgo, longAgo);
    expect(await adapter.putDocument('sessions', 's', full(1, '{}'), create)).toEqual({ ok: true });
  });

  it('B4: where symbolic links are refused, O_EXCL lock files keep writers exclusive', async () => {
    const { adapter, disk } = await openSimulated();
    disk.inject({ operation: 'symlink', code: 'EPERM' });
    // A second view of the same disk does not share the in-process queue: like another process.
    const second = await openSimulated(disk, { fileSystem: countingFileSystem(disk).fileSystem });
    await adapter.putDocument('sessions', 's', full(1, '{}'), create);
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, index) =>
        (index % 2 ? adapter : second.adapter).putDocument('sessions', 's', full(2, `${index}`), {
          expectedRevision: 1,
          durable: false,
        }),
      ),
    );
    expect(results.filter((result) => result.ok)).toHaveLength(1);
    expect(disk.counts.symlink).toBeGreaterThan(0);
    // A writer keeps its lock leased for a moment after a write; closing lets go of it.
    await adapter.close();
    await second.adapter.close();
    expect(await disk.readdir('/store/sessions/s=')).toEqual(['document']);
  });
});
