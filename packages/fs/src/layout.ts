import { join } from 'node:path';
import { COLLECTIONS as CORE_COLLECTIONS, type Collection } from '@keepsake/core';
import { encodeId } from './id-encoding.js';

/**
 * Where everything lives under the root directory (documented in the README):
 *
 *   <root>/keepsake-fs.json                  layout marker { "layout": 1 }
 *   <root>/sessions/<id>/document            base: one JSON header line + the document text
 *   <root>/sessions/<id>/deltas              framed delta records appended since the base
 *   <root>/sessions/<id>/lock                lock file while a writer holds the document
 *   <root>/revisions/<id>/…, lifecycle/<id>/…, runs/<id>/…, checkpoints/<id>/…,
 *   <root>/checkpoint-writes/<id>/…          the same, for the other collections (core's
 *                                            COLLECTIONS; `.` in an id is `+` on disk)
 *   <root>/journals/<session>/<run>.journal  framed journal batches of one run
 *   <root>/journals/<session>/<run>.lock     lock file while an append is in progress
 *   <root>/index/document, deltas, lock      the session index (base + deltas)
 *   <root>/quarantine/<entry>/               documents that did not parse, bytes intact
 *   <root>/wal/<pid>-<token>-<n>.log         group-commit log of a process (journal frames)
 *
 * `<id>`, `<session>` and `<run>` are encoded with `encodeId` (A1).
 */
export const LAYOUT_VERSION = 1;
/** Every document collection has a directory of its own (core's list, so none is missed). */
export const COLLECTIONS: readonly Collection[] = CORE_COLLECTIONS;
export const JOURNAL_SUFFIX = '.journal';
export const LOCK_SUFFIX = '.lock';

export interface SegmentPaths {
  readonly directory: string;
  readonly base: string;
  readonly deltas: string;
  readonly lock: string;
  /** False for per-document directories, which come and go (see Durability.ensureLinked). */
  readonly stableDirectory: boolean;
}

export interface JournalPaths {
  readonly directory: string;
  readonly file: string;
  readonly lock: string;
}

export class Layout {
  readonly root: string;

  constructor(root: string) {
    this.root = root;
  }

  get marker(): string {
    return join(this.root, 'keepsake-fs.json');
  }

  collectionDirectory(collection: Collection): string {
    return join(this.root, collection);
  }

  document(collection: Collection, id: string): SegmentPaths {
    return segmentPaths(join(this.root, collection, encodeId(id)), false);
  }

  get index(): SegmentPaths {
    return segmentPaths(join(this.root, 'index'), true);
  }

  get journalsDirectory(): string {
    return join(this.root, 'journals');
  }

  sessionJournals(sessionId: string): string {
    return join(this.root, 'journals', encodeId(sessionId));
  }

  journal(sessionId: string, runId: string): JournalPaths {
    const directory = this.sessionJournals(sessionId);
    const name = encodeId(runId);
    return {
      directory,
      file: join(directory, `${name}${JOURNAL_SUFFIX}`),
      lock: join(directory, `${name}${LOCK_SUFFIX}`),
    };
  }

  get quarantineDirectory(): string {
    return join(this.root, 'quarantine');
  }

  /** Group-commit logs of the processes using this store (group-commit-log.ts). */
  get logDirectory(): string {
    return join(this.root, 'wal');
  }

  /** The directories `open()` creates. */
  get fixedDirectories(): string[] {
    return [
      ...COLLECTIONS.map((collection) => this.collectionDirectory(collection)),
      this.index.directory,
      this.journalsDirectory,
      this.quarantineDirectory,
    ];
  }
}

function segmentPaths(directory: string, stableDirectory: boolean): SegmentPaths {
  return {
    directory,
    base: join(directory, 'document'),
    deltas: join(directory, 'deltas'),
    lock: join(directory, 'lock'),
    stableDirectory,
  };
}
