import { InvalidConfigError } from '@keepsake/core';
import { z } from 'zod';
import { type FileSystem, nodeFileSystem } from './file-system.js';

export interface FsAdapterOptions {
  /** The root directory of the store; created on `open()` when missing. */
  directory: string;
  /**
   * B2: temp files older than this are removed when the adapter opens. Younger ones may
   * belong to a writer in another process that is still running.
   * @default 600_000 (10 minutes)
   */
  tempMaxAgeMs?: number;
  /**
   * B4: a lock file older than this is stale even when its owner cannot be checked (another
   * host). On this host a lock whose process is gone is stale at once.
   * @default 30_000
   */
  lockStaleMs?: number;
  /**
   * B4: how long a write waits for a lock held by a live process before it fails with a
   * BackendError. Locks are held for one write, so this only trips on a stuck process.
   * @default 30_000
   */
  lockTimeoutMs?: number;
  /**
   * E2: the most bytes of records one group commit writes before it flushes, so one large
   * event does not hold back the small ones queued behind it for long.
   * @default 1_048_576 (1 MiB)
   */
  journalBatchBytes?: number;
  /**
   * B2: retry a rename that fails with EPERM, EACCES or EBUSY, up to 4 times over about 300 ms:
   * on Windows that is a transient sharing violation (another process, often an antivirus or
   * a search indexer, has the file open), not a permission error. Turn it on for a share a
   * Windows server exports (SMB/CIFS) mounted on Linux or macOS, which reports the same
   * violations; leave it off elsewhere, where those codes are real permission errors.
   * @default true on Windows, false elsewhere
   */
  retrySharingViolations?: boolean;
  /**
   * C1: how many files `sync()` flushes at once.
   * @default 8
   */
  syncConcurrency?: number;
  /**
   * The filesystem calls, `node:fs/promises` by default. Tests pass a counting wrapper or the
   * fault-injecting filesystem from `@keepsake/fs/testing`.
   * @default nodeFileSystem
   */
  fileSystem?: FileSystem;
  /**
   * Open for inspection: `open()` creates nothing, replays no group-commit log into a journal
   * (reads add what a replay would, from memory) and removes none, sweeps nothing and takes
   * no lock; every write primitive rejects with `ReadOnlyError`. See the README, "Read-only
   * open".
   * @default false
   */
  readOnly?: boolean;
}

export interface ResolvedFsAdapterOptions {
  directory: string;
  tempMaxAgeMs: number;
  lockStaleMs: number;
  lockTimeoutMs: number;
  journalBatchBytes: number;
  syncConcurrency: number;
  retrySharingViolations: boolean;
  fileSystem: FileSystem;
  readOnly: boolean;
}

const fileSystemMethods = [
  'open',
  'rename',
  'unlink',
  'mkdir',
  'rmdir',
  'readdir',
  'readFile',
  'stat',
  'lstat',
  'symlink',
  'readlink',
];

const fileSystemSchema = z.custom<FileSystem>(
  (value) =>
    typeof value === 'object' &&
    value !== null &&
    fileSystemMethods.every(
      (method) => typeof (value as Record<string, unknown>)[method] === 'function',
    ),
  { message: `must be an object with the methods ${fileSystemMethods.join(', ')}` },
);

const positiveMs = z.number().int().positive();

const optionsSchema = z.strictObject({
  directory: z.string().min(1, 'must be a non-empty path'),
  tempMaxAgeMs: z.number().int().nonnegative().default(600_000),
  lockStaleMs: positiveMs.default(30_000),
  lockTimeoutMs: positiveMs.default(30_000),
  journalBatchBytes: z.number().int().min(1024).default(1_048_576),
  syncConcurrency: z.number().int().min(1).max(256).default(8),
  retrySharingViolations: z.boolean().default(process.platform === 'win32'),
  fileSystem: fileSystemSchema.default(nodeFileSystem),
  readOnly: z.boolean().default(false),
});

/** Validates options at construction; a bad option is an InvalidConfigError naming it. */
export function resolveOptions(options: unknown): ResolvedFsAdapterOptions {
  const result = optionsSchema.safeParse(options);
  if (result.success) {
    // The filesystem object itself, not a copy (zod copies defaults): journal readers of
    // this process find unapplied frames by it (unapplied-frames.ts).
    const given = (options as { fileSystem?: FileSystem }).fileSystem;
    return { ...result.data, fileSystem: given ?? nodeFileSystem } as ResolvedFsAdapterOptions;
  }
  const issue = result.error.issues[0];
  const option = issue?.path.length ? issue.path.join('.') : null;
  const message = option
    ? `fs adapter: option \`${option}\` is invalid: ${issue?.message}`
    : `fs adapter: options are invalid: ${issue?.message ?? 'expected an object'}`;
  throw new InvalidConfigError(message, { cause: result.error });
}
