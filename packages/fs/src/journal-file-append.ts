import { randomBytes } from 'node:crypto';
import type { LogDurability } from '@keepsake/core';
import type { AdapterContext } from './context.js';
import { type FileHandle, writeAllNow } from './file-system.js';
import { encodeFrame } from './framing.js';
import type { HeldJournal } from './journal-hold.js';
import type { KnownTail } from './journal-tail.js';
import type { JournalPaths } from './layout.js';
import { encodeJournalHeader, NONCE_BYTES } from './records.js';

/**
 * Writes a batch to the held journal file itself (a new journal, `each`, `none`, or `group`
 * when the group-commit log cannot cover it), updating `tail`. A new journal starts with
 * its header (a fresh nonce). A failed write or flush is cut off again, so it never shows
 * up later as if it had landed.
 */
export async function appendToJournalFile(
  context: AdapterContext,
  paths: JournalPaths,
  held: HeldJournal,
  tail: KnownTail,
  frames: Uint8Array,
  durability: LogDurability,
): Promise<void> {
  const start = tail.size;
  const header: Uint8Array[] = [];
  if (held.handle === null || tail.size === 0) {
    // A new journal (or one whose creation a crash interrupted): it starts with its nonce.
    held.handle ??= await context.fileSystem.open(paths.file, 'wx');
    tail.inode = (await held.handle.stat()).ino;
    tail.nonce = randomBytes(NONCE_BYTES).toString('hex');
    header.push(encodeFrame(encodeJournalHeader(tail.nonce)));
  }
  const handle = held.handle;
  const bytes = header.length === 0 ? frames : Buffer.concat([...header, frames]);
  try {
    // A page-cache write, done at once where the handle can (file-system.ts).
    const written = writeAllNow(handle, bytes, start);
    if (written !== undefined) await written;
    tail.size = start + bytes.length;
    if (durability !== 'none') await syncJournal(context, paths, handle, tail);
  } catch (error) {
    await handle.truncate(start).catch(() => undefined);
    throw error;
  }
  if (durability === 'none') context.durability.markDirty(paths.directory, paths.file);
}

/** `each`, or `group` without the log: the journal's own fdatasync covers all of it. */
async function syncJournal(
  context: AdapterContext,
  paths: JournalPaths,
  handle: FileHandle,
  tail: KnownTail,
): Promise<void> {
  await handle.datasync();
  if (!tail.linked) {
    await context.durability.syncDirectory(paths.directory);
    await context.durability.ensureLinked(paths.directory, false);
    tail.linked = true;
  }
  tail.covered = tail.size;
}
