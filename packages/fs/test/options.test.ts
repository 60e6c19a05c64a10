import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { BackendError, createSessionStore, InvalidConfigError } from '@keepsake/core';
import { describe, expect, it } from 'vitest';
import { nodeFileSystem } from '../src/file-system.js';
import { fsAdapter, fsCapabilities } from '../src/index.js';
import { openAdapter, tempDirectory } from './helpers.js';

function configError(options: unknown): InvalidConfigError {
  try {
    fsAdapter(options as Parameters<typeof fsAdapter>[0]);
  } catch (error) {
    if (InvalidConfigError.isInstance(error)) return error;
    throw error;
  }
  throw new Error('expected an InvalidConfigError');
}

describe('options', () => {
  it('rejects bad options at construction with an InvalidConfigError naming the option', () => {
    expect(configError({}).message).toContain('`directory`');
    expect(configError({ directory: '' }).message).toContain('`directory`');
    expect(configError({ directory: '/x', tempMaxAgeMs: -1 }).message).toContain('`tempMaxAgeMs`');
    expect(configError({ directory: '/x', lockStaleMs: 0 }).message).toContain('`lockStaleMs`');
    expect(configError({ directory: '/x', journalBatchBytes: 10 }).message).toContain(
      '`journalBatchBytes`',
    );
    expect(configError({ directory: '/x', fileSystem: { open() {} } }).message).toContain(
      '`fileSystem`',
    );
    expect(configError({ directory: '/x', fsync: true }).message).toContain('fsync');
  });

  it('H1: declares what it honours, with no gap', async () => {
    const adapter = await openAdapter();
    expect(adapter.specificationVersion).toBe('v1');
    expect(adapter.name).toBe('fs');
    expect(adapter.capabilities).toEqual({
      durability: 'fsync',
      conditionalWrites: true,
      sharedAcrossProcesses: true,
      appendDeltas: true,
      nativeAppend: true,
      groupCommit: true,
      clusterSafeKeys: false,
      indexWithDocument: true,
      gaps: [],
    });
    expect(fsCapabilities).toBe(adapter.capabilities);
  });

  it('refuses a directory written by a later layout instead of misreading it', async () => {
    const adapter = await openAdapter();
    await adapter.close();
    await writeFile(join(adapter.directory, 'keepsake-fs.json'), '{"keepsake":"fs","layout":2}');
    await expect(openAdapter({ directory: adapter.directory })).rejects.toSatisfy(
      InvalidConfigError.isInstance,
    );
  });
});

/**
 * Issue 35: a store directory that cannot be created. Under /proc, mkdir answers ENOENT for a
 * directory whose parent exists, and Node's recursive mkdir retried that forever at full CPU:
 * `open()`, and every store call waiting for it (list(), create()), never answered. Each call
 * must reject with a typed error at once; a hang fails the test by its timeout.
 */
describe('A2: a store directory that cannot be created', () => {
  const onLinux = process.platform === 'linux';

  it.skipIf(!onLinux)(
    'A2: mkdir where /proc refuses a directory rejects with its errno, once',
    async () => {
      await expect(nodeFileSystem.mkdir('/proc/self/nope')).rejects.toMatchObject({
        code: 'ENOENT',
      });
      await expect(nodeFileSystem.mkdir('/proc/keepsake-test/a/b')).rejects.toMatchObject({
        code: 'ENOENT',
      });
    },
  );

  it.skipIf(!onLinux)(
    'A2: open() under /proc rejects with a BackendError naming the `directory` option, and list() and create() of a store on it with the same',
    async () => {
      for (const directory of ['/proc/self/nope', '/proc/keepsake-test/store']) {
        const adapter = fsAdapter({ directory });
        const error = await adapter.open().catch((caught: unknown) => caught);
        expect(BackendError.isInstance(error), String(error)).toBe(true);
        expect((error as BackendError).message).toContain('`directory`');
        expect((error as BackendError).message).toContain(directory);
        expect((error as BackendError).isRetryable).toBe(false);
        await adapter.close();
        const store = createSessionStore({ adapter: fsAdapter({ directory }) });
        await expect(store.list()).rejects.toSatisfy(BackendError.isInstance);
        await expect(store.create({ id: 's1' })).rejects.toSatisfy(BackendError.isInstance);
        await store.close().catch(() => undefined);
      }
    },
  );

  it('A2: a directory below a file rejects with a BackendError naming the option, and creates nothing', async () => {
    const root = await tempDirectory();
    const file = join(root, 'plain-file');
    await writeFile(file, 'user data');
    const adapter = fsAdapter({ directory: join(file, 'store') });
    const error = await adapter.open().catch((caught: unknown) => caught);
    expect(BackendError.isInstance(error), String(error)).toBe(true);
    expect((error as BackendError).message).toContain('`directory`');
    await adapter.close();
    expect(await readFile(file, 'utf8')).toBe('user data');
  });
});
