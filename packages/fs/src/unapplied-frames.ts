import type { LogRecordInput } from '@keepsake/core';
import type { FileSystem } from './file-system.js';
import { decodeFrames } from './framing.js';
import { decodeJournalBatch } from './records.js';

/**
 * E2 group commit without a journal write per event. A `group` append whose frames are
 * durable in the group-commit log is not written to its journal file at once: its frames
 * wait here, and the writer appends all that waited to the file with one write a little
 * later (journal-writer.ts). On ext4 every small write to a file dirties its inode and
 * can stall behind the log's fdatasync; one write per journal every few milliseconds
 * instead of one per event is what lets many streams share each flush.
 *
 * Until then, readers in this process see the frames through this registry (read merges
 * them after the file's records); readers in other processes see them once written, a few
 * milliseconds later, and after a crash the log is replayed into the journal.
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

  /** The records waiting, batch by batch, in append order. */
  records(): LogRecordInput[][] {
    const batches: LogRecordInput[][] = [];
    for (const frames of this.frames) {
      for (const payload of decodeFrames(frames).payloads) {
        const records = decodeJournalBatch(payload);
        if (records !== null && records.length > 0) batches.push(records);
      }
    }
    return batches;
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
 * The records of this process's unapplied frames of one journal incarnation that continue
 * `lastSequence` (what the file holds), in order. Frames of another incarnation (a deleted
 * and re-created journal) and records the file already holds are left out.
 */
export function unappliedRecords(
  fileSystem: FileSystem,
  path: string,
  nonce: string | null,
  lastSequence: number,
): LogRecordInput[] {
  const set = registry.get(fileSystem)?.get(path);
  if (set === undefined || nonce === null) return [];
  const continuing: LogRecordInput[] = [];
  let last = lastSequence;
  for (const frames of set) {
    if (frames.nonce !== nonce) continue;
    for (const batch of frames.records()) {
      if ((batch[0] as LogRecordInput).sequence !== last + 1) continue;
      continuing.push(...batch);
      last = (batch.at(-1) as LogRecordInput).sequence;
    }
  }
  return continuing;
}
