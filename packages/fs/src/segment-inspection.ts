import type { FileStats, FileSystem } from './file-system.js';
import type { SegmentPaths } from './layout.js';
import { readOptional, statOptional, statOptionalNow } from './optional-file.js';
import { type BaseHeader, probeBaseHeader } from './segment-base.js';
import { deltasOf } from './segment-deltas.js';

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

/** Under the lock: the base header (not its text) and the delta file. */
export async function inspectSegment(
  fileSystem: FileSystem,
  paths: SegmentPaths,
): Promise<Inspection> {
  const probe = await probeBaseHeader(fileSystem, paths.base);
  if (probe === null) {
    return { base: null, corrupt: null, revision: null, deltaCount: 0, deltaFile: null };
  }
  if (probe.status === 'corrupt') {
    const revision = probe.revision;
    return { base: null, corrupt: { revision }, revision, deltaCount: 0, deltaFile: null };
  }
  const header = probe.header;
  const deltaBytes = await readOptional(fileSystem, paths.deltas);
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

/**
 * `inspectSegment`, or the inspection a leased lock kept when both files still are what it
 * describes: the base the same file (inode, size, mtime), the deltas the length it knew.
 */
export async function inspectSegmentCached(
  fileSystem: FileSystem,
  paths: SegmentPaths,
  cached: CachedInspection | null,
  statsAtOnce: boolean,
): Promise<CachedInspection> {
  if (cached !== null) {
    // Two stats per save: on a local disk done at once where the filesystem can (a save
    // then costs no thread-pool round trip before its write), else concurrently.
    const stat = statsAtOnce ? statOptionalNow : statOptional;
    const baseNow = stat(fileSystem, paths.base);
    const deltasNow = stat(fileSystem, paths.deltas);
    const [base, deltas] =
      baseNow instanceof Promise || deltasNow instanceof Promise
        ? await Promise.all([baseNow, deltasNow])
        : [baseNow, deltasNow];
    const file = cached.inspection.deltaFile;
    const deltasMatch =
      file === null ? deltas === null : deltas !== null && deltas.size === file.validLength;
    // A delta file re-created at the same length is another file (a read's knowledge
    // names the inode it read; a lease's, the last one it checked or null).
    const sameDeltas =
      cached.deltasInode === null || deltas === null || deltas.ino === cached.deltasInode;
    if (deltasMatch && sameDeltas && !file?.torn && identityOf(base) === cached.baseIdentity) {
      return { ...cached, deltasInode: deltas?.ino ?? null };
    }
  }
  const [inspection, base, deltas] = await Promise.all([
    inspectSegment(fileSystem, paths),
    statOptional(fileSystem, paths.base),
    statOptional(fileSystem, paths.deltas),
  ]);
  return { inspection, baseIdentity: identityOf(base), deltasInode: deltas?.ino ?? null };
}

/** What tells a cached base from one replaced since (see CachedInspection). */
export function identityOf(stats: FileStats | null): string {
  return stats === null ? 'absent' : `${stats.ino}:${stats.size}:${stats.mtimeMs}`;
}
