import { isNotFound } from './errors.js';
import { type FileHandle, type FileSystem, readAt } from './file-system.js';
import { parseJournal } from './journal-format.js';

/**
 * What this process knows of a journal, valid while the file's inode and size match.
 * `size` and `lastSequence` include the frames not yet written to the file (unapplied).
 */
export interface KnownTail {
  inode: number;
  size: number;
  lastSequence: number;
  /** The journal's nonce (its header); null for a file without one. */
  nonce: string | null;
  /** The file's name and header are durable (file and directory fsynced since creation). */
  linked: boolean;
  /** Bytes from the start that are durable, or covered by the group-commit log. */
  covered: number;
  /**
   * Set on a tail a read learned (not this process's own writes): the file must also still
   * have this mtime, as a document's file identity must (see JournalStore.read).
   */
  mtimeMs?: number;
}

/**
 * Under the journal's lock: its tail, from `known` when the file is as this process left
 * it, else from the file, cutting a torn tail (E3). `handle` is null when the file is
 * missing.
 */
export async function openJournalTail(
  fileSystem: FileSystem,
  path: string,
  known: KnownTail | null,
  statAtOnce = false,
): Promise<{ handle: FileHandle | null; tail: KnownTail }> {
  let stats: Awaited<ReturnType<FileSystem['stat']>>;
  try {
    // `statAtOnce` (a local disk): with `statSync`, as a leased document write checks its files.
    stats =
      statAtOnce && fileSystem.statSync !== undefined
        ? fileSystem.statSync(path)
        : await fileSystem.stat(path);
  } catch (error) {
    if (!isNotFound(error)) throw error;
    const tail = { inode: -1, size: 0, lastSequence: 0, nonce: null, linked: false, covered: 0 };
    return { handle: null, tail };
  }
  const handle = await fileSystem.open(path, 'r+');
  if (
    known &&
    known.inode === stats.ino &&
    known.size === stats.size &&
    (known.mtimeMs === undefined || known.mtimeMs === stats.mtimeMs)
  ) {
    // From here on the tail follows this writer's appends, which change the mtime.
    const { mtimeMs: _learnedAt, ...tail } = known;
    return { handle, tail };
  }
  try {
    const parsed = parseJournal(await readAt(handle, stats.size, 0));
    if (parsed.torn) await handle.truncate(parsed.validLength);
    // Written by another process or an earlier one: nothing is known to be durable.
    const tail: KnownTail = {
      inode: stats.ino,
      size: parsed.validLength,
      lastSequence: parsed.lastSequence,
      nonce: parsed.nonce,
      linked: false,
      covered: 0,
    };
    return { handle, tail };
  } catch (error) {
    await handle.close().catch(() => undefined);
    throw error;
  }
}

/** Whether the journal file, read anew, already holds everything `tail` says was appended. */
export async function fileHolds(
  fileSystem: FileSystem,
  path: string,
  tail: KnownTail,
): Promise<boolean> {
  try {
    const parsed = parseJournal(await fileSystem.readFile(path));
    return parsed.nonce === tail.nonce && parsed.lastSequence >= tail.lastSequence;
  } catch {
    return false;
  }
}
