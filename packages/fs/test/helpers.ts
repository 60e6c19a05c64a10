import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { SessionSummary, StorageAdapter } from '@keepsake/core';
import { afterEach } from 'vitest';
import { type FsAdapterOptions, fsAdapter } from '../src/index.js';
import { type FaultInjectingFileSystem, faultInjectingFileSystem } from '../src/testing/index.js';

const directories: string[] = [];
const adapters: StorageAdapter[] = [];

afterEach(async () => {
  for (const adapter of adapters.splice(0)) await adapter.close();
  for (const directory of directories.splice(0)) {
    await rm(directory, { recursive: true, force: true });
  }
});

/** A fresh temp directory, removed after the test. */
export async function tempDirectory(): Promise<string> {
  const directory = await mkdtemp(join(tmpdir(), 'keepsake-fs-test-'));
  directories.push(directory);
  return directory;
}

/** An opened adapter on a real temp directory (or on `directory`), closed after the test. */
export async function openAdapter(
  options: Partial<FsAdapterOptions> = {},
): Promise<StorageAdapter & { directory: string }> {
  const directory = options.directory ?? (await tempDirectory());
  const adapter = fsAdapter({ ...options, directory });
  adapters.push(adapter);
  await adapter.open();
  return Object.assign(adapter, { directory });
}

/** An opened adapter on a simulated disk (FAULT INJECTION), mounted at /store. */
export async function openSimulated(
  disk: FaultInjectingFileSystem = faultInjectingFileSystem(),
  options: Partial<FsAdapterOptions> = {},
): Promise<{ adapter: StorageAdapter; disk: FaultInjectingFileSystem }> {
  const adapter = fsAdapter({ directory: '/store', fileSystem: disk, ...options });
  adapters.push(adapter);
  await adapter.open();
  return { adapter, disk };
}

export function summary(id: string, updatedAt: number, title = ''): SessionSummary {
  return {
    id,
    title,
    createdAt: 1,
    updatedAt,
    messageCount: 0,
    pending: false,
    parentId: null,
    rotatedTo: null,
  };
}

export const full = (revision: number, text: string) => ({ kind: 'full', revision, text }) as const;
export const delta = (revision: number, text: string) =>
  ({ kind: 'delta', revision, text }) as const;

const tsHooks = fileURLToPath(new URL('./fixtures/ts-hooks.mjs', import.meta.url));

/**
 * Starts `test/fixtures/<script>` (TypeScript, through the test's loader hooks) in a real
 * Node process with `args`; stdin, stdout and stderr are pipes. Children share a compile
 * cache: start-up is most of a short child's life.
 */
export function spawnFixture(
  script: string,
  args: readonly string[],
): ChildProcessWithoutNullStreams {
  const path = fileURLToPath(new URL(`./fixtures/${script}`, import.meta.url));
  return spawn(
    process.execPath,
    ['--disable-warning=ExperimentalWarning', '--import', tsHooks, path, ...args],
    {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, NODE_COMPILE_CACHE: join(tmpdir(), 'keepsake-fs-crash-test-cache') },
    },
  );
}
