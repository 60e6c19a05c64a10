import { createSessionStore, type SessionStore, type StorageAdapter } from '@keepsake/core';
import { type BackendSpec, parseBackendUrl } from './backend-url.js';
import type { CliIo } from './cli-io.js';
import { type BackendRole, createBackend, openBackend } from './open-backend.js';
import { createProgress, type Progress, progressMode } from './progress.js';

/** What every command gets: where to write, and the global options. */
export class CommandContext {
  readonly io: CliIo;
  readonly quiet: boolean;

  constructor(io: CliIo, quiet: boolean) {
    this.io = io;
    this.quiet = quiet;
  }

  backend(url: string): BackendSpec {
    return parseBackendUrl(url, this.io.cwd);
  }

  progress(): Progress {
    return createProgress(this.io.stderr, progressMode(this.io.stderr, this.quiet));
  }

  async print(text = ''): Promise<void> {
    await this.io.stdout.write(`${text}\n`);
  }

  async printJson(value: unknown): Promise<void> {
    await this.io.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
  }

  /** A message for the operator (stderr): never mixed into results. */
  async note(text: string): Promise<void> {
    if (!this.quiet) await this.io.stderr.write(`${text}\n`);
  }

  /** Runs `work` with the backend's adapter open, and closes it whatever happens. */
  async withAdapter<T>(
    spec: BackendSpec,
    role: BackendRole,
    work: (adapter: StorageAdapter) => Promise<T>,
  ): Promise<T> {
    const adapter = await openBackend(spec, role);
    try {
      return await work(adapter);
    } finally {
      await adapter.close().catch(() => undefined);
    }
  }

  /**
   * Runs `work` with a session store over the backend: the store's reads are the contract's
   * (a listing never shows what is not stored, B7). To `read`, the store is read-only
   * (`readOnly: true`, over an adapter opened read-only): what a load or a listing would
   * repair is repaired in memory and never written. Closed whatever happens.
   */
  async withStore<T>(
    spec: BackendSpec,
    role: BackendRole,
    work: (store: SessionStore) => Promise<T>,
  ): Promise<T> {
    const store = createSessionStore({
      adapter: await createBackend(spec, role),
      readOnly: role === 'read',
    });
    try {
      return await work(store);
    } finally {
      await store.close().catch(() => undefined);
    }
  }
}
