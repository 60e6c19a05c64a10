import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { memoryAdapter, type StorageAdapter } from '@keepsake/core';
import { fsAdapter } from '@keepsake/fs';

/** A fresh adapter of one backend, and how to dispose of what it stored. */
export interface TestBackend {
  readonly name: string;
  create(): Promise<{ adapter: StorageAdapter; dispose(): Promise<void> }>;
}

/** The backends the saver's own behaviour tests run on (real filesystem, no mocks). */
export const backends: readonly TestBackend[] = [
  {
    name: 'memory',
    async create() {
      const adapter = memoryAdapter();
      return { adapter, dispose: () => adapter.close() };
    },
  },
  {
    name: 'fs',
    async create() {
      const directory = await mkdtemp(join(tmpdir(), 'keepsake-langgraph-backend-'));
      const adapter = fsAdapter({ directory });
      return {
        adapter,
        async dispose() {
          await adapter.close();
          await rm(directory, { recursive: true, force: true });
        },
      };
    },
  },
];
