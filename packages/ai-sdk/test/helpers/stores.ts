import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  createSessionStore,
  dropMemoryNamespace,
  memoryAdapter,
  type SessionStore,
  type SessionStoreOptions,
} from '@keepsake/core';
import { fsAdapter } from '@keepsake/fs';

type StoreSettings = Omit<SessionStoreOptions, 'adapter'>;

/**
 * One backend that several stores open, as several server instances (or one after a
 * restart) would: the in-memory reference adapter by namespace, or a temp directory.
 */
export interface Backend {
  readonly name: 'memory' | 'fs';
  /** A new store over the backend (a new server instance). */
  open(settings?: StoreSettings): SessionStore;
  /** Closes every store it opened and removes the data. */
  dispose(): Promise<void>;
  /** The fs directory (fs only). */
  readonly directory: string | null;
}

let counter = 0;

/**
 * `defaults` apply to every store the backend opens (a test's `open()` settings go on top):
 * give them one `ManualClock` so that every instance agrees on the time, and a recovery
 * grace passes when the test says so, not when the machine is slow.
 */
export async function createBackend(
  name: 'memory' | 'fs',
  defaults: StoreSettings = {},
): Promise<Backend> {
  const stores: SessionStore[] = [];
  const namespace = `ai-sdk-${process.pid}-${++counter}`;
  const directory = name === 'fs' ? await mkdtemp(join(tmpdir(), 'keepsake-ai-sdk-')) : null;
  return {
    name,
    directory,
    open(settings = {}) {
      const adapter = directory === null ? memoryAdapter({ namespace }) : fsAdapter({ directory });
      const store = createSessionStore({ adapter, ...defaults, ...settings });
      stores.push(store);
      return store;
    },
    async dispose() {
      await Promise.all(stores.map((store) => (store.closed ? undefined : store.close())));
      if (directory !== null) await rm(directory, { recursive: true, force: true });
      else dropMemoryNamespace(namespace);
    },
  };
}
