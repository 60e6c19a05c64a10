import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { InvalidConfigError } from '@keepsake/core';
import { describe, expect, it } from 'vitest';
import { fsAdapter, fsCapabilities } from '../src/index.js';
import { openAdapter } from './helpers.js';

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
