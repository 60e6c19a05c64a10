import type { FileSystem } from './file-system.js';
import { batchesInFrames, type PendingBatch } from './pending-batches.js';

/**
 * E2 group commit without a journal write per event. A `group` append whose frames are
 * durable in the group-commit log is not written to its journal file at once: its frames
 * wait here, and the writer appends all that waited to the file with one write a little
 * later (journal-writer.ts). On ext4 every small write to a file dirties its inode and
 * can stall behind the log's fdatasync; one write per journal every few milliseconds
 * instead of one per event is what lets many streams share each flush.
 *
 * Until then, readers in this process see the frames through this registry (read merges
 * them after the file's records, captureUnapplied); readers in other processes find them in
 * the group-commit log (other-process-logs.ts), and after a crash the log is replayed into
 * the journal.
 */
export class UnappliedFrames {
  readonly path: string;
  /** The journal incarnation the frames continue (its header nonce). */
  readonly nonce: string;
  private readonly fileSystem: FileSystem;
  private frames: Uint8Array[] = [];
  private byteCount = 0;

  constructor(fileSystem: FileSystem, path: string, nonce: string) {
    this.fileSystem = fileSystem;
    this.path = path;
    this.nonce = nonce;
  }

  get bytes(): number {
    return this.byteCount;
  }

  get isEmpty(): boolean {
    return this.frames.length === 0;
  }

  add(frames: Uint8Array): void {
    if (this.frames.length === 0) register(this.fileSystem, this);
    this.frames.push(frames);
    this.byteCount += frames.length;
  }

  /** Everything waiting now, as one buffer, and how many frames that is (for `drop`). */
  snapshot(): { bytes: Uint8Array; count: number } {
    const count = this.frames.length;
    const bytes = count === 1 ? (this.frames[0] as Uint8Array) : Buffer.concat(this.frames);
    return { bytes, count };
  }

  /** The first `count` frames reached the file. */
  drop(count: number): void {
    for (const frame of this.frames.splice(0, count)) this.byteCount -= frame.length;
    if (this.frames.length === 0) unregister(this.fileSystem, this);
  }

  /** Written to the file, or dropped (a failed write, a deleted journal). */
  clear(): void {
    this.frames = [];
    this.byteCount = 0;
    unregister(this.fileSystem, this);
  }

  /** The frames waiting now, in append order (a copy of the list: `drop` changes it). */
  capture(): { nonce: string; frames: readonly Uint8Array[] } {
    return { nonce: this.nonce, frames: this.frames.slice() };
  }
}

/** Per filesystem (tests run several simulated disks in one process), per journal path. */
const registry = new WeakMap<FileSystem, Map<string, Set<UnappliedFrames>>>();

function register(fileSystem: FileSystem, frames: UnappliedFrames): void {
  let byPath = registry.get(fileSystem);
  if (byPath === undefined) {
    byPath = new Map();
    registry.set(fileSystem, byPath);
  }
  let set = byPath.get(frames.path);
  if (set === undefined) {
    set = new Set();
    byPath.set(frames.path, set);
  }
  set.add(frames);
}

function unregister(fileSystem: FileSystem, frames: UnappliedFrames): void {
  const byPath = registry.get(fileSystem);
  const set = byPath?.get(frames.path);
  if (set === undefined) return;
  set.delete(frames);
  if (set.size === 0) byPath?.delete(frames.path);
}

/**
 * This process's waiting frames of the journal at `path`, as they are at this moment, as
 * batches. A reader takes them BEFORE it reads the file (JournalStore.read): a frame the
 * applier drops afterwards was written to the file first, so the file read after holds it;
 * taken after the file instead, a frame written and dropped in between would be in neither.
 */
export function captureUnapplied(fileSystem: FileSystem, path: string): PendingBatch[] {
  const set = registry.get(fileSystem)?.get(path);
  if (set === undefined) return [];
  // A copy of each list (drop() changes it); the frames themselves never change.
  const captured = [...set].map((frames) => frames.capture());
  return captured.flatMap(({ nonce, frames }) =>
    frames.flatMap((frame) => batchesInFrames(nonce, frame)),
  );
}
