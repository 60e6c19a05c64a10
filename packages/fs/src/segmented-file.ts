import { writeFileAtomic } from './atomic-write.js';
import type { Durability } from './durability.js';
import { toBackendError } from './errors.js';
import {
  type FileHandle,
  type FileStats,
  type FileSystem,
  writeAll,
  writeAllNow,
} from './file-system.js';
import type { SegmentPaths } from './layout.js';
import { readOptional, statOptional, statOptionalNow, unlinkOptional } from './optional-file.js';
import type { Delta } from './records.js';
import { type BaseRead, encodeBase, readBase } from './segment-base.js';
import { type DeltaWrite, deltasOf, encodeDeltaFrames } from './segment-deltas.js';
import {
  type CachedInspection,
  type Inspection,
  identityOf,
  inspectSegment,
  inspectSegmentCached,
} from './segment-inspection.js';

/** Deltas up to this size are written to the page cache at once (appendDelta). */
const SYNC_WRITE_MAX_BYTES = 64 * 1024;

export interface SegmentSnapshot {
  readonly base: BaseRead;
  /** Deltas of this base, oldest first, each with a revision no lower than the one before. */
  readonly deltas: Delta[];
}

/**
 * O(1) appends for documents and the index: a base written in full (atomic replace) plus a
 * file of framed deltas appended since.
 *
 * The base starts with one JSON header line `{ format, revision, nonce, bytes, crc32c }`
 * followed by the text. Each delta carries the nonce of the base it extends, so when a full
 * write replaces the base (a compaction) the old deltas stop applying at the instant of the
 * rename, before they are unlinked: a crash between the two steps leaves stale deltas that
 * readers ignore and the next delta write replaces. Readers read the deltas first and the
 * base second; whatever interleaves with a writer, they see one state that existed.
 */
export class SegmentedFiles {
  private readonly fileSystem: FileSystem;
  private readonly durability: Durability;
  /** Bases made durable by this process, by path, with their nonce. */
  private readonly durableBases = new Map<string, string>();
  /**
   * Delta files whose name is durable, by path, as `<base nonce>:<inode>`: a delta file is
   * only ever re-created for a new base, so the pair cannot be reused by another file.
   */
  private readonly linkedDeltas = new Map<string, string>();
  /** Whether the root is on a local disk (`setLocalDisk`). */
  private localDisk = false;
  /** Delta files kept open by `appendDelta` under a leased lock, by directory. */
  private readonly heldDeltas = new Map<string, { handle: FileHandle; inode: number }>();

  /** B2: the adapter's `retrySharingViolations` option, for every atomic replace. */
  private readonly retrySharingViolations: boolean;

  constructor(fileSystem: FileSystem, durability: Durability, retrySharingViolations: boolean) {
    this.fileSystem = fileSystem;
    this.durability = durability;
    this.retrySharingViolations = retrySharingViolations;
  }

  /** Lock-free read: deltas first, then the base. */
  async read(paths: SegmentPaths): Promise<SegmentSnapshot> {
    const deltaBytes = await readOptional(this.fileSystem, paths.deltas);
    const base = await this.readBase(paths.base);
    if (base.status !== 'ok' || deltaBytes === null) return { base, deltas: [] };
    return { base, deltas: deltasOf(deltaBytes, base.header.nonce, base.header.revision).deltas };
  }

  /**
   * `read`, plus what a writer would learn by inspecting the files under the lock, when the
   * read can vouch for it: on a local disk, each file stat'ed before and after it was read
   * and found the same (inode, size, mtime) both times, so the bytes parsed are those of the
   * file the identity names. A writer that takes the lock next checks that identity with two
   * `stat`s (as a leased lock does, `inspectCached`) instead of reading the header and the
   * deltas again: every write of the document by anyone changes it (a full write renames a
   * new base in, a delta grows the delta file, a torn tail cut shrinks it, a new delta file
   * is a new inode), so a match means nothing was written since the read. Null otherwise.
   */
  async readKnowing(
    paths: SegmentPaths,
  ): Promise<{ snapshot: SegmentSnapshot; knowledge: CachedInspection | null }> {
    if (!this.localDisk || this.fileSystem.statSync === undefined) {
      return { snapshot: await this.read(paths), knowledge: null };
    }
    const deltasBefore = statOptionalNow(this.fileSystem, paths.deltas) as FileStats | null;
    const deltaBytes = await readOptional(this.fileSystem, paths.deltas);
    const deltasAfter = statOptionalNow(this.fileSystem, paths.deltas) as FileStats | null;
    const baseBefore = statOptionalNow(this.fileSystem, paths.base) as FileStats | null;
    const base = await this.readBase(paths.base);
    const baseAfter = statOptionalNow(this.fileSystem, paths.base) as FileStats | null;
    if (base.status !== 'ok') return { snapshot: { base, deltas: [] }, knowledge: null };
    const header = base.header;
    const found = deltaBytes === null ? null : deltasOf(deltaBytes, header.nonce, header.revision);
    const snapshot = { base, deltas: found?.deltas ?? [] };
    const deltasSteady =
      identityOf(deltasBefore) === identityOf(deltasAfter) &&
      (deltasAfter === null
        ? deltaBytes === null
        : deltaBytes !== null && deltaBytes.length === deltasAfter.size);
    const baseSteady = baseAfter !== null && identityOf(baseBefore) === identityOf(baseAfter);
    if (!deltasSteady || !baseSteady) return { snapshot, knowledge: null };
    const last = found?.deltas.at(-1);
    const inspection: Inspection = {
      base: { revision: header.revision, nonce: header.nonce, header },
      corrupt: null,
      revision: last ? last.revision : header.revision,
      deltaCount: found?.deltas.length ?? 0,
      deltaFile:
        found === null
          ? null
          : { validLength: found.validLength, torn: found.torn, fresh: found.fresh },
    };
    const knowledge = {
      inspection,
      baseIdentity: identityOf(baseAfter),
      deltasInode: deltasAfter?.ino ?? null,
    };
    return { snapshot, knowledge };
  }

  /** Under the lock: the base header (not its text) and the delta file. */
  inspect(paths: SegmentPaths): Promise<Inspection> {
    return inspectSegment(this.fileSystem, paths);
  }

  /**
   * Replaces the base (new nonce) and drops the deltas of the old one. `onVisible` runs once
   * the new base is in place (renamed), before the directory's fsync: readers see it from then
   * on, whatever fails after.
   */
  async writeBase(
    paths: SegmentPaths,
    revision: number,
    text: string,
    durable: boolean,
    extra: Record<string, number> = {},
    onVisible?: () => void,
  ): Promise<CachedInspection> {
    const { header, nonce, bytes } = encodeBase(revision, text, extra);
    await writeFileAtomic(this.fileSystem, paths.base, bytes, {
      durable,
      retrySharingViolations: this.retrySharingViolations,
      ...(onVisible === undefined ? {} : { onRenamed: onVisible }),
    });
    await this.closeHeld(paths.directory);
    await unlinkOptional(this.fileSystem, paths.deltas);
    this.linkedDeltas.delete(paths.deltas);
    if (durable) {
      await this.durability.syncDirectory(paths.directory);
      await this.durability.ensureLinked(paths.directory, paths.stableDirectory);
      this.durableBases.set(paths.base, nonce);
      this.durability.markClean(paths.directory);
    } else {
      this.durableBases.delete(paths.base);
      this.durability.markDirty(paths.directory, paths.base);
    }
    const inspection: Inspection = {
      base: { revision, nonce, header },
      corrupt: null,
      revision,
      deltaCount: 0,
      deltaFile: null,
    };
    const baseIdentity = identityOf(await statOptional(this.fileSystem, paths.base));
    return { inspection, baseIdentity, deltasInode: null };
  }

  /**
   * `inspect`, or the inspection a leased lock kept when both files still are what it
   * describes: the base the same file (inode, size, mtime), the deltas the length it knew.
   */
  inspectCached(paths: SegmentPaths, cached: CachedInspection | null): Promise<CachedInspection> {
    return inspectSegmentCached(this.fileSystem, paths, cached, this.localDisk);
  }

  /**
   * Whether the store's root is on a local disk (`FileSystem.isLocalDisk`), set when the
   * adapter opens. Only there does a leased writer check its files with `statSync` and keep
   * its delta file open between appends: on NFS a `stat` may wait for the server, and what
   * is written reaches the server at `close` (or a flush), so readers on other hosts would
   * see an append only once the lease is let go.
   */
  setLocalDisk(localDisk: boolean): void {
    this.localDisk = localDisk;
  }

  /** Whether the root is on a local disk, where a `statSync` never waits for a server. */
  get onLocalDisk(): boolean {
    return this.localDisk;
  }

  /**
   * Appends deltas to the current base with one write (and one fdatasync when durable);
   * `inspection` comes from `inspect` under the same lock, `deltasInode` too when known.
   * Returns the inspection after it.
   *
   * With `keepOpen` (a writer under a leased lock), on a local disk (`setLocalDisk`), the
   * delta file stays open for the next append under the same lease, which saves an open and
   * a close per save, each a round trip through libuv's thread pool; `closeHeld` closes it
   * when the lease is let go. It is reused only while `deltasInode` (checked with a stat
   * under the lock) is still its inode.
   *
   * `onVisible` runs once the deltas are in the file (written, or the new file renamed in),
   * before any flush: readers see them from then on, unless that flush fails, in which case
   * the append is cut off again (readers then see the document as it was).
   */
  async appendDelta(
    paths: SegmentPaths,
    inspection: Inspection,
    deltas: ReadonlyArray<DeltaWrite>,
    durable: boolean,
    deltasInode: number | null = null,
    keepOpen = false,
    onVisible?: () => void,
  ): Promise<Inspection> {
    const base = inspection.base;
    const last = deltas.at(-1);
    if (base === null || last === undefined)
      throw new Error('appendDelta needs a base and a delta');
    const frame = encodeDeltaFrames(base.nonce, deltas);
    const file = inspection.deltaFile;
    const after = (validLength: number): Inspection => ({
      ...inspection,
      revision: last.revision,
      deltaCount: (file?.fresh ? inspection.deltaCount : 0) + deltas.length,
      deltaFile: { validLength, torn: false, fresh: true },
    });
    if (file === null || !file.fresh) {
      // No delta file for this base yet (or one left by a replaced base): create it whole.
      await this.closeHeld(paths.directory);
      await writeFileAtomic(this.fileSystem, paths.deltas, frame, {
        durable,
        retrySharingViolations: this.retrySharingViolations,
        ...(onVisible === undefined ? {} : { onRenamed: onVisible }),
      });
      this.linkedDeltas.delete(paths.deltas);
      if (durable) {
        if (!(await this.makeBaseDurable(paths, base.nonce))) {
          await this.durability.syncDirectory(paths.directory);
          await this.durability.ensureLinked(paths.directory, paths.stableDirectory);
        }
        await this.rememberLinkedDeltas(paths.deltas, base.nonce);
        this.durability.markClean(paths.directory);
      } else {
        this.durability.markDirty(paths.directory, paths.deltas);
      }
      return after(frame.length);
    }
    const keep = keepOpen && this.localDisk;
    const handle = await this.deltaHandle(paths, deltasInode, keep);
    let closeNow = !keep;
    try {
      // E3: a torn tail from a crash mid-append is cut off before the next frame goes on.
      if (file.torn) await handle.truncate(file.validLength);
      try {
        // A small delta (a message) goes into the page cache before this returns, where the
        // handle can: a thread-pool round trip less per save, and the fdatasync is what takes
        // time. A large one is written off the event loop, which it would hold up.
        if (frame.length <= SYNC_WRITE_MAX_BYTES) {
          const written = writeAllNow(handle, frame, file.validLength);
          if (written !== undefined) await written;
        } else {
          await writeAll(handle, frame, file.validLength);
        }
        onVisible?.();
        if (durable) await handle.datasync();
      } catch (error) {
        // A failed append must not show up later as if it had landed: cut it off again.
        await handle.truncate(file.validLength).catch(() => undefined);
        closeNow = true;
        throw error;
      }
      if (durable) {
        // The inode the caller saw under this lock, else one fstat.
        const inode = deltasInode ?? (await handle.stat()).ino;
        const identity = `${base.nonce}:${inode}`;
        const directorySynced = await this.makeBaseDurable(paths, base.nonce);
        if (this.linkedDeltas.get(paths.deltas) !== identity) {
          if (!directorySynced) {
            await this.durability.syncDirectory(paths.directory);
            await this.durability.ensureLinked(paths.directory, paths.stableDirectory);
          }
          this.linkedDeltas.set(paths.deltas, identity);
        }
        this.durability.markClean(paths.directory);
      } else {
        this.durability.markDirty(paths.directory, paths.deltas);
      }
    } finally {
      if (closeNow) await this.closeHandle(paths.directory, handle);
    }
    return after(file.validLength + frame.length);
  }

  /** Closes the delta file `appendDelta` kept open in `directory`, if any (the lease ends). */
  async closeHeld(directory: string): Promise<void> {
    const held = this.heldDeltas.get(directory);
    if (held !== undefined) await this.closeHandle(directory, held.handle);
  }

  /** The kept handle while its inode is still the delta file's, else a new one. */
  private async deltaHandle(
    paths: SegmentPaths,
    deltasInode: number | null,
    keepOpen: boolean,
  ): Promise<FileHandle> {
    const held = this.heldDeltas.get(paths.directory);
    if (held !== undefined) {
      if (keepOpen && deltasInode !== null && held.inode === deltasInode) return held.handle;
      await this.closeHandle(paths.directory, held.handle);
    }
    const handle = await this.fileSystem.open(paths.deltas, 'r+');
    if (keepOpen) {
      try {
        // The inode the caller saw under this lock, else one fstat.
        const inode = deltasInode ?? (await handle.stat()).ino;
        this.heldDeltas.set(paths.directory, { handle, inode });
      } catch (error) {
        await handle.close().catch(() => undefined);
        throw toBackendError(error, `stat ${paths.deltas}`);
      }
    }
    return handle;
  }

  private async closeHandle(directory: string, handle: FileHandle): Promise<void> {
    if (this.heldDeltas.get(directory)?.handle === handle) this.heldDeltas.delete(directory);
    await handle.close().catch(() => undefined);
  }

  /**
   * Removes base and deltas. The base goes first: without it the document is absent, whatever
   * deltas remain (a crash in between leaves stale deltas that no base will ever match).
   * Deltas first would let a crash in between roll the document back to its bare base.
   */
  async remove(paths: SegmentPaths, durable: boolean): Promise<void> {
    await this.closeHeld(paths.directory);
    await unlinkOptional(this.fileSystem, paths.base);
    await unlinkOptional(this.fileSystem, paths.deltas);
    this.durableBases.delete(paths.base);
    this.linkedDeltas.delete(paths.deltas);
    if (durable) await this.durability.syncDirectory(paths.directory);
    else this.durability.markDirty(paths.directory);
  }

  readBase(path: string): Promise<BaseRead> {
    return readBase(this.fileSystem, path);
  }

  /**
   * True when it fsynced the directory (after the caller's deltas were in place, so that
   * fsync made their name durable too).
   */
  private async makeBaseDurable(paths: SegmentPaths, nonce: string): Promise<boolean> {
    if (this.durableBases.get(paths.base) === nonce) return false;
    await this.durability.syncFile(paths.base);
    await this.durability.syncDirectory(paths.directory);
    await this.durability.ensureLinked(paths.directory, paths.stableDirectory);
    this.durableBases.set(paths.base, nonce);
    return true;
  }

  private async rememberLinkedDeltas(path: string, nonce: string): Promise<void> {
    try {
      this.linkedDeltas.set(path, `${nonce}:${(await this.fileSystem.stat(path)).ino}`);
    } catch (error) {
      throw toBackendError(error, `stat ${path}`);
    }
  }

  readOptional(path: string): Promise<Uint8Array | null> {
    return readOptional(this.fileSystem, path);
  }

  unlinkOptional(path: string): Promise<void> {
    return unlinkOptional(this.fileSystem, path);
  }
}
