import { join } from 'node:path';
import type { StorageAdapter } from '@keepsake/core';
import { fsAdapter } from '@keepsake/fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT_CODES } from '../src/exit-codes.js';
import { keepsake, tempDirectory } from './helpers/run-keepsake.js';
import { fillSampleStore } from './helpers/sample-store.js';
import { contentsOf, expectSameContents } from './helpers/store-contents.js';

/**
 * Issue 22: run records, checkpoints and checkpoint writes (the collections core and
 * @keepsake/langgraph write besides sessions) go everywhere the other documents go: a
 * migration and an export/import carry them byte for byte (H3), verify checks and counts
 * them, and a damaged one is a problem verify reports. (Core writes run records of its own
 * for the sample store's runs, so their count is not pinned.)
 */
let root: Awaited<ReturnType<typeof tempDirectory>>;

beforeAll(async () => {
  root = await tempDirectory('collections');
});

afterAll(async () => {
  await root?.remove();
});

const PLANTED = [
  ['runs', 'run-1', '{"sessionId":"s0"}'],
  ['checkpoints', 'thread-1._.1f0aa', '{"keepsake":"langgraph-checkpoint","bytes":"AP8="}'],
  ['checkpoints', 'thread-1._.1f0ab', '{"keepsake":"langgraph-checkpoint","n":2}'],
  ['checkpoint-writes', 'thread-1._.1f0aa.task-1.0', '{"keepsake":"langgraph-writes"}'],
] as const;

async function plant(adapter: StorageAdapter): Promise<void> {
  await adapter.open();
  try {
    for (const [collection, id, text] of PLANTED) {
      const result = await adapter.putDocument(
        collection,
        id,
        { kind: 'full', revision: 1, text },
        { expectedRevision: null, durable: true },
      );
      expect(result.ok).toBe(true);
    }
  } finally {
    await adapter.close();
  }
}

describe('collections beyond sessions', () => {
  it('H3: migrate and export/import carry run records, checkpoints and checkpoint writes byte for byte; verify counts them', async () => {
    const original = join(root.path, 'original');
    await fillSampleStore(fsAdapter({ directory: original }), { sessions: 2, tokensPerRun: 2 });
    await plant(fsAdapter({ directory: original }));

    const copy = join(root.path, 'copy');
    const migrated = await keepsake(['migrate', '--from', original, '--to', copy]);
    expect(migrated.exitCode, migrated.stderr).toBe(EXIT_CODES.ok);
    expect(migrated.stdout).toMatch(/\d+ run records, 2 checkpoints, 1 checkpoint writes/);

    const file = join(root.path, 'export.jsonl');
    const exported = await keepsake(['export', original, '--output', file]);
    expect(exported.exitCode, exported.stderr).toBe(EXIT_CODES.ok);
    const imported = join(root.path, 'imported');
    const importedResult = await keepsake(['import', file, '--to', imported]);
    expect(importedResult.exitCode, importedResult.stderr).toBe(EXIT_CODES.ok);

    const before = await contentsOf(fsAdapter({ directory: original }));
    for (const [collection, id, text] of PLANTED) {
      expect(before.documents[collection].get(id)?.base).toBe(text);
    }
    expectSameContents(await contentsOf(fsAdapter({ directory: copy })), before);
    expectSameContents(await contentsOf(fsAdapter({ directory: imported })), before);

    const verified = await keepsake(['verify', copy]);
    expect(verified.exitCode, verified.stdout).toBe(EXIT_CODES.ok);
    expect(verified.stdout).toMatch(/\d+ run records, 2 checkpoints, 1 checkpoint writes/);
  });

  it('A2: verify reports a checkpoint that is not JSON as a problem', async () => {
    const directory = join(root.path, 'damaged');
    const adapter = fsAdapter({ directory });
    await adapter.open();
    await adapter.putDocument(
      'checkpoints',
      'thread-9._.1f0aa',
      { kind: 'full', revision: 1, text: '{"torn' },
      { expectedRevision: null, durable: true },
    );
    await adapter.close();
    const verified = await keepsake(['verify', directory]);
    expect(verified.exitCode).toBe(EXIT_CODES.problemsFound);
    expect(verified.stdout).toMatch(/checkpoints\/thread-9\._\.1f0aa: does not parse as JSON/);
  });
});
