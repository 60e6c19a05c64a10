import { randomBytes } from 'node:crypto';
import { writeFileAtomic } from './atomic-write.js';
import type { Durability } from './durability.js';
import { isNotFound, toBackendError } from './errors.js';
import { type FileStats, type FileSystem, readAt, writeAll } from './file-system.js';
import { checksum, decodeFrames, encodeFrame, FRAME_HEADER_BYTES } from './framing.js';
import type { SegmentPaths } from './layout.js';
import { type Delta, decodeDelta, encodeDelta, NONCE_BYTES } from './records.js';

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
export interface BaseHeader {
  readonly format: 'keepsake-base';
  readonly revision: number;
  readonly nonce: string;
  readonly bytes: number;
  readonly crc32c: number;
  /** Extra numbers a user of the base keeps in its header (the index keeps its entry count). */
  readonly [extra: string]: unknown;
}

export type BaseRead =
  | { readonly status: 'missing' }
  /** The base exists but its header or checksum is wrong; `raw` is its text, as is. */
  | { readonly status: 'corrupt'; readonly raw: string; readonly revision: number }
  | { readonly status: 'ok'; readonly header: BaseHeader; readonly text: string };

export interface SegmentSnapshot {
  readonly base: BaseRead;
  /** Deltas of this base, oldest first, each with a revision no lower than the one before. */
  readonly deltas: Delta[];
}

/** What a writer holding the lock needs to know before it writes. */
export interface Inspection {
  readonly base: {
    readonly revision: number;
    readonly nonce: string;
    readonly header: BaseHeader;
  } | null;
  readonly corrupt: { readonly revision: number } | null;
  /** The revision of the last delta of this base, or of the base. */
  readonly revision: number | null;
  readonly deltaCount: number;
  readonly deltaFile: {
    readonly validLength: number;
    readonly torn: boolean;
    readonly fresh: boolean;
  } | null;
}

/**
 * An inspection kept while the lock stays leased, with the base's identity (inode, size,
 * mtime) when it was taken: the next write under the same lease checks it with two `stat`s
 * instead of reading the header and the deltas again. Nothing else writes the files while
 * the lock is held; the check catches files changed by hand (or by a crash test) anyway.
 */
export interface CachedInspection {
  readonly inspection: Inspection;
  readonly baseIdentity: string;
  /** The delta file's inode when last checked under this lock (null: none, or not known). */
  readonly deltasInode: number | null;
}

export interface DeltaWrite {
  readonly revision: number;
  readonly text: string;
}

const HEADER_PROBE_BYTES = 4096;

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

  constructor(fileSystem: FileSystem, durability: Durability) {
    this.fileSystem = fileSystem;
    this.durability = durability;
  }

  /** Lock-free read: deltas first, then the base. */
  async read(paths: SegmentPaths): Promise<SegmentSnapshot> {
    const deltaBytes = await this.readOptional(paths.deltas);
    const base = await this.readBase(paths.base);
    if (base.status !== 'ok' || deltaBytes === null) return { base, deltas: [] };
    return { base, deltas: deltasOf(deltaBytes, base.header.nonce, base.header.revision).deltas };
  }

  /** Under the lock: the base header (not its text) and the delta file. */
  async inspect(paths: SegmentPaths): Promise<Inspection> {
    const probe = await this.probeHeader(paths.base);
    if (probe === null) {
      return { base: null, corrupt: null, revision: null, deltaCount: 0, deltaFile: null };
    }
    if (probe.status === 'corrupt') {
      const revision = probe.revision;
      return { base: null, corrupt: { revision }, revision, deltaCount: 0, deltaFile: null };
    }
    const header = probe.header;
    const deltaBytes = await this.readOptional(paths.deltas);
    const base = { revision: header.revision, nonce: header.nonce, header };
    if (deltaBytes === null) {
      return { base, corrupt: null, revision: header.revision, deltaCount: 0, deltaFile: null };
    }
    const found = deltasOf(deltaBytes, header.nonce, header.revision);
    const last = found.deltas.at(-1);
    return {
      base,
      corrupt: null,
      revision: last ? last.revision : header.revision,
      deltaCount: found.deltas.length,
      deltaFile: { validLength: found.validLength, torn: found.torn, fresh: found.fresh },
    };
  }

  /** Replaces the base (new nonce) and drops the deltas of the old one. */
  async writeBase(
    paths: SegmentPaths,
    revision: number,
    text: string,
    durable: boolean,
    extra: Record<string, number> = {},
  ): Promise<CachedInspection> {
    const body = Buffer.from(text, 'utf8');
    const nonce = randomBytes(NONCE_BYTES).toString('hex');
    const header: BaseHeader = {
      format: 'keepsake-base',
      revision,
      nonce,
      bytes: body.length,
      crc32c: checksum(body),
      ...extra,
    };
    const bytes = Buffer.concat([Buffer.from(`${JSON.stringify(header)}\n`, 'utf8'), body]);
    await writeFileAtomic(this.fileSystem, paths.base, bytes, { durable });
    await this.unlinkOptional(paths.deltas);
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
    const baseIdentity = identityOf(await this.statOptional(paths.base));
    return { inspection, baseIdentity, deltasInode: null };
  }

  /**
   * `inspect`, or the inspection a leased lock kept when both files still are what it
   * describes: the base the same file (inode, size, mtime), the deltas the length it knew.
   */
  async inspectCached(
    paths: SegmentPaths,
    cached: CachedInspection | null,
  ): Promise<CachedInspection> {
    if (cached !== null) {
      const [base, deltas] = await Promise.all([
        this.statOptional(paths.base),
        this.statOptional(paths.deltas),
      ]);
      const file = cached.inspection.deltaFile;
      const deltasMatch =
        file === null ? deltas === null : deltas !== null && deltas.size === file.validLength;
      if (deltasMatch && !file?.torn && identityOf(base) === cached.baseIdentity) {
        return { ...cached, deltasInode: deltas?.ino ?? null };
      }
    }
    const [inspection, base, deltas] = await Promise.all([
      this.inspect(paths),
      this.statOptional(paths.base),
      this.statOptional(paths.deltas),
    ]);
    return { inspection, baseIdentity: identityOf(base), deltasInode: deltas?.ino ?? null };
  }

  /**
   * Appends deltas to the current base with one write (and one fdatasync when durable);
   * `inspection` comes from `inspect` under the same lock, `deltasInode` too when known.
   * Returns the inspection after it.
   */
  async appendDelta(
    paths: SegmentPaths,
    inspection: Inspection,
    deltas: ReadonlyArray<DeltaWrite>,
    durable: boolean,
    deltasInode: number | null = null,
  ): Promise<Inspection> {
    const base = inspection.base;
    const last = deltas.at(-1);
    if (base === null || last === undefined)
      throw new Error('appendDelta needs a base and a delta');
    const frame = Buffer.concat(
      deltas.map((delta) => encodeFrame(encodeDelta(base.nonce, delta.revision, delta.text))),
    );
    const file = inspection.deltaFile;
    const after = (validLength: number): Inspection => ({
      ...inspection,
      revision: last.revision,
      deltaCount: (file?.fresh ? inspection.deltaCount : 0) + deltas.length,
      deltaFile: { validLength, torn: false, fresh: true },
    });
    if (file === null || !file.fresh) {
      // No delta file for this base yet (or one left by a replaced base): create it whole.
      await writeFileAtomic(this.fileSystem, paths.deltas, frame, { durable });
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
    const handle = await this.fileSystem.open(paths.deltas, 'r+');
    try {
      // E3: a torn tail from a crash mid-append is cut off before the next frame goes on.
      if (file.torn) await handle.truncate(file.validLength);
      try {
        await writeAll(handle, frame, file.validLength);
        if (durable) await handle.datasync();
      } catch (error) {
        // A failed append must not show up later as if it had landed: cut it off again.
        await handle.truncate(file.validLength).catch(() => undefined);
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
      await handle.close().catch(() => undefined);
    }
    return after(file.validLength + frame.length);
  }

  /**
   * Removes base and deltas. The base goes first: without it the document is absent, whatever
   * deltas remain (a crash in between leaves stale deltas that no base will ever match).
   * Deltas first would let a crash in between roll the document back to its bare base.
   */
  async remove(paths: SegmentPaths, durable: boolean): Promise<void> {
    await this.unlinkOptional(paths.base);
    await this.unlinkOptional(paths.deltas);
    this.durableBases.delete(paths.base);
    this.linkedDeltas.delete(paths.deltas);
    if (durable) await this.durability.syncDirectory(paths.directory);
    else this.durability.markDirty(paths.directory);
  }

  async readBase(path: string): Promise<BaseRead> {
    const bytes = await this.readOptional(path);
    if (bytes === null) return { status: 'missing' };
    const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
    const newline = buffer.indexOf(10);
    const header = newline < 0 ? null : parseHeader(buffer.toString('utf8', 0, newline));
    const body = buffer.subarray(newline + 1);
    if (header === null || header.bytes !== body.length || header.crc32c !== checksum(body)) {
      return { status: 'corrupt', raw: buffer.toString('utf8'), revision: header?.revision ?? 0 };
    }
    return { status: 'ok', header, text: body.toString('utf8') };
  }

  private async probeHeader(
    path: string,
  ): Promise<
    { status: 'ok'; header: BaseHeader } | { status: 'corrupt'; revision: number } | null
  > {
    let handle: Awaited<ReturnType<FileSystem['open']>>;
    try {
      handle = await this.fileSystem.open(path, 'r');
    } catch (error) {
      if (isNotFound(error)) return null;
      throw toBackendError(error, `open ${path}`);
    }
    try {
      const bytes = Buffer.from(await readAt(handle, HEADER_PROBE_BYTES, 0));
      const newline = bytes.indexOf(10);
      const header = newline < 0 ? null : parseHeader(bytes.toString('utf8', 0, newline));
      return header ? { status: 'ok', header } : { status: 'corrupt', revision: 0 };
    } catch (error) {
      throw toBackendError(error, `read ${path}`);
    } finally {
      await handle.close().catch(() => undefined);
    }
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

  private async statOptional(path: string): Promise<FileStats | null> {
    try {
      return await this.fileSystem.stat(path);
    } catch (error) {
      if (isNotFound(error)) return null;
      throw toBackendError(error, `stat ${path}`);
    }
  }

  async readOptional(path: string): Promise<Uint8Array | null> {
    try {
      return await this.fileSystem.readFile(path);
    } catch (error) {
      if (isNotFound(error)) return null;
      throw toBackendError(error, `read ${path}`);
    }
  }

  async unlinkOptional(path: string): Promise<void> {
    try {
      await this.fileSystem.unlink(path);
    } catch (error) {
      if (!isNotFound(error)) throw toBackendError(error, `remove ${path}`);
    }
  }
}

function identityOf(stats: FileStats | null): string {
  return stats === null ? 'absent' : `${stats.ino}:${stats.size}:${stats.mtimeMs}`;
}

function parseHeader(line: string): BaseHeader | null {
  try {
    const header = JSON.parse(line) as Partial<BaseHeader>;
    if (
      header.format === 'keepsake-base' &&
      typeof header.revision === 'number' &&
      typeof header.nonce === 'string' &&
      /^[0-9a-f]{16}$/.test(header.nonce) &&
      typeof header.bytes === 'number' &&
      typeof header.crc32c === 'number'
    ) {
      return header as BaseHeader;
    }
  } catch {
    // Not a header: the caller reports the base as corrupt.
  }
  return null;
}

/** The deltas of one base in a delta file; `fresh` when the file holds nothing else. */
function deltasOf(
  bytes: Uint8Array,
  nonce: string,
  baseRevision: number,
): { deltas: Delta[]; validLength: number; torn: boolean; fresh: boolean } {
  const frames = decodeFrames(bytes);
  const deltas: Delta[] = [];
  let revision = baseRevision;
  let offset = 0;
  for (const payload of frames.payloads) {
    const delta = decodeDelta(payload);
    if (delta === null || delta.nonce !== nonce || delta.revision < revision) {
      // A file left by a replaced base: none of it applies, and the next write replaces it.
      if (deltas.length === 0) {
        return { deltas, validLength: frames.validLength, torn: frames.torn, fresh: false };
      }
      // Never written that way; if it were, keep what applies and treat the rest as torn.
      return { deltas, validLength: offset, torn: true, fresh: true };
    }
    deltas.push(delta);
    revision = delta.revision;
    offset += FRAME_HEADER_BYTES + payload.length;
  }
  return { deltas, validLength: frames.validLength, torn: frames.torn, fresh: true };
}
