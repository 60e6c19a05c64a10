import { dirname } from 'node:path';
import type {
  Collection,
  DeleteOptions,
  DocumentWrite,
  IdPage,
  ListDocumentsOptions,
  PutResult,
  StoredDocument,
  WriteOptions,
} from '@keepsake/core';
import { InvalidInputError, type KeepsakeError, WriteOutcomeUnknownError } from '@keepsake/core';
import { type AdapterContext, makeDirectory, removeDirectoryIfEmpty } from './context.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import { ADAPTER_NAME, isNotFound, toBackendError } from './errors.js';
import { assertDocumentId, decodeName } from './id-encoding.js';
import type { SegmentPaths } from './layout.js';
import { statOptional, statOptionalNow } from './optional-file.js';
import type { CachedInspection } from './segment-inspection.js';

/** How many reads' knowledge DocumentStore keeps for a write that follows (a few KiB). */
const REMEMBERED_READS = 64;

/**
 * Documents of every collection (core's `COLLECTIONS`): one directory per
 * document holding its base, its deltas and its lock file (see segmented-file.ts). A
 * directory per document keeps each document's directory fsyncs to its own entries: a
 * durable save of one session never makes another session's unsynced rename durable ahead
 * of that session's data.
 */
export class DocumentStore {
  private readonly context: AdapterContext;
  /**
   * What the latest reads learned of their documents' files, by lock path, for the write
   * that often follows a read (a load that repairs the session, F1): the oldest go first.
   */
  private readonly reads = new Map<string, CachedInspection>();

  constructor(context: AdapterContext) {
    this.context = context;
  }

  private rememberRead(lockPath: string, knowledge: CachedInspection | null): void {
    this.reads.delete(lockPath);
    if (knowledge === null) return;
    this.reads.set(lockPath, knowledge);
    if (this.reads.size > REMEMBERED_READS) {
      this.reads.delete(this.reads.keys().next().value as string);
    }
  }

  private takeRead(lockPath: string): CachedInspection | null {
    const knowledge = this.reads.get(lockPath) ?? null;
    this.reads.delete(lockPath);
    return knowledge;
  }

  async get(collection: Collection, id: string): Promise<StoredDocument | null> {
    assertDocumentId(collection, id);
    const paths = this.context.layout.document(collection, id);
    const { snapshot, knowledge } = await this.context.segments.readKnowing(paths);
    this.rememberRead(paths.lock, knowledge);
    const base = snapshot.base;
    if (base.status === 'missing') return null;
    // A2: bytes that fail their checksum go to core as they are; they do not parse, and core
    // quarantines them. Never an empty document, never "not found".
    if (base.status === 'corrupt') return { revision: base.revision, base: base.raw, deltas: [] };
    const last = snapshot.deltas.at(-1);
    return {
      revision: last ? last.revision : base.header.revision,
      base: base.text,
      deltas: snapshot.deltas.map((delta) => delta.text),
    };
  }

  /**
   * Whether the document's base exists (a corrupt one too: `get` returns its bytes). A listing
   * asks once per entry (B7), so on a local disk it is one `statSync`, not a thread-pool trip.
   */
  async has(collection: Collection, id: string): Promise<boolean> {
    assertDocumentId(collection, id);
    const { fileSystem, layout, segments } = this.context;
    const base = layout.document(collection, id).base;
    const stat = segments.onLocalDisk ? statOptionalNow : statOptional;
    return (await stat(fileSystem, base)) !== null;
  }

  /**
   * B4: a conditional write under the document's lock file. `hooks` (B7) hear, under the
   * lock, when the write became visible (before its flush, so work they start overlaps it)
   * and when a visible write was taken back; a refused write or one that failed before it
   * became visible calls neither.
   *
   * A failure after the write became visible is told apart by what is stored now:
   * - still this write (the fsync of its directory failed, say): it rejects with
   *   `WriteOutcomeUnknownError`, since readers see the write but it may not survive a power
   *   loss (B2: a write that did not land is never reported as done, and one that may have
   *   landed is not reported as failed);
   * - the document as it was (a delta whose fdatasync failed is cut off again): it rejects
   *   with the error, as a write that did not land, after `hooks.onTakenBack`.
   */
  async put(
    collection: Collection,
    id: string,
    write: DocumentWrite,
    options: WriteOptions,
    hooks?: WriteHooks,
  ): Promise<PutResult> {
    assertDocumentId(collection, id);
    assertWrite(write);
    const { segments, locks, fileSystem } = this.context;
    const paths = this.context.layout.document(collection, id);
    let wrote = false;
    // The lock is leased: a session saved again and again keeps it (and what it knows of the
    // files) between saves, instead of creating and unlinking a lock file per save.
    const result = await locks.withLeasedLock(
      paths.lock,
      () => makeDirectory(fileSystem, paths.directory),
      async (held): Promise<PutResult> => {
        // A lease's knowledge, else a recent read's (segments.readKnowing): checked with two
        // stats either way, and read afresh when the files changed since.
        const read = this.takeRead(paths.lock);
        const known = (held.cache as CachedInspection | null) ?? read;
        const cached = await segments.inspectCached(paths, known);
        held.cache = cached;
        const inspection = cached.inspection;
        if (inspection.revision !== options.expectedRevision) {
          return { ok: false, currentRevision: inspection.revision };
        }
        held.cache = null;
        // A delta extends a readable base; there is none (missing or corrupt) to extend.
        if (write.kind === 'delta' && (inspection.base === null || inspection.revision === null)) {
          return { ok: false, currentRevision: inspection.revision };
        }
        // Equal is a rewrite of the same revision (core's flush); lower would never be read.
        if (
          write.kind === 'delta' &&
          inspection.revision !== null &&
          write.revision < inspection.revision
        ) {
          throw new InvalidInputError(
            `fs adapter: delta revision ${write.revision} of ${collection}/${id} is below the stored ${inspection.revision}`,
          );
        }
        let visible = false;
        const onVisible = () => {
          visible = true;
          hooks?.onVisible();
        };
        try {
          if (write.kind === 'full') {
            held.cache = await segments.writeBase(
              paths,
              write.revision,
              write.text,
              options.durable,
              {},
              onVisible,
            );
          } else {
            const deltas = [{ revision: write.revision, text: write.text }];
            const next = await segments.appendDelta(
              paths,
              inspection,
              deltas,
              options.durable,
              cached.deltasInode,
              true,
              onVisible,
            );
            held.cache = { ...cached, inspection: next };
          }
        } catch (error) {
          if (!visible) throw error;
          throw await this.failedAfterVisible(paths, `${collection}/${id}`, write, error, hooks);
        }
        wrote = true;
        return { ok: true };
      },
    );
    // A conditional write refused on a missing document leaves no empty directory behind.
    if (!wrote && !result.ok && result.currentRevision === null) {
      await locks.releaseLease(paths.lock);
      await this.prune(paths.directory);
    }
    return result;
  }

  /**
   * What a write that failed after it became visible means, by what is stored now (see
   * `put`). Under the document's lock.
   */
  private async failedAfterVisible(
    paths: SegmentPaths,
    name: string,
    write: DocumentWrite,
    error: unknown,
    hooks: WriteHooks | undefined,
  ): Promise<KeepsakeError> {
    const unknown = () =>
      new WriteOutcomeUnknownError(ADAPTER_NAME, `write ${name} (revision ${write.revision})`, {
        cause: error,
      });
    let revision: number | null;
    try {
      revision = (await this.context.segments.inspect(paths)).revision;
    } catch {
      // What is stored cannot be read back: nobody can say whether the write landed.
      return unknown();
    }
    if (revision === write.revision) return unknown();
    await hooks?.onTakenBack();
    return toBackendError(error, `write ${name}`);
  }

  async delete(collection: Collection, id: string, options: DeleteOptions): Promise<PutResult> {
    assertDocumentId(collection, id);
    const { segments, locks, fileSystem } = this.context;
    const paths = this.context.layout.document(collection, id);
    const result = await locks.withLock(
      paths.lock,
      () => makeDirectory(fileSystem, paths.directory),
      async (): Promise<PutResult> => {
        const inspection = await segments.inspect(paths);
        const expected = options.expectedRevision;
        if (expected !== undefined && inspection.revision !== expected) {
          return { ok: false, currentRevision: inspection.revision };
        }
        if (inspection.revision !== null) await segments.remove(paths, options.durable);
        // Already gone, perhaps by a delete that was not durable: make that absence durable.
        else if (options.durable) await this.context.durability.syncDirectory(paths.directory);
        return { ok: true };
      },
      true,
    );
    await this.prune(paths.directory);
    // The directory's removal (or an earlier one the lock above re-created) is in the parent.
    if (options.durable && result.ok) {
      await this.context.durability.syncDirectory(dirname(paths.directory));
    }
    return result;
  }

  /** Ids in code-point order, from an opaque cursor; only documents that exist are listed. */
  async list(collection: Collection, options: ListDocumentsOptions): Promise<IdPage> {
    const { fileSystem, layout } = this.context;
    if (!Number.isInteger(options.limit) || options.limit < 1) {
      throw new InvalidInputError('fs adapter: listDocuments needs a positive integer limit');
    }
    const directory = layout.collectionDirectory(collection);
    let names: string[];
    try {
      names = await fileSystem.readdir(directory);
    } catch (error) {
      if (isNotFound(error)) return { ids: [], nextCursor: null };
      throw toBackendError(error, `list ${directory}`);
    }
    const after = options.cursor === null ? null : decodeCursor(options.cursor);
    const prefix = options.prefix ?? '';
    const candidates = names
      .map((name) => decodeName(name))
      .filter((id): id is string => id !== null && isDocumentId(collection, id))
      .filter((id) => id.startsWith(prefix) && (after === null || id > after))
      .sort((left, right) => (left < right ? -1 : left > right ? 1 : 0));
    const ids: string[] = [];
    for (const id of candidates) {
      // A directory without a base is a deleted document whose directory was not removed yet.
      if (!(await this.baseExists(collection, id))) continue;
      if (ids.length === options.limit) return { ids, nextCursor: encodeCursor(ids.at(-1)) };
      ids.push(id);
    }
    return { ids, nextCursor: null };
  }

  private async baseExists(collection: Collection, id: string): Promise<boolean> {
    const path = this.context.layout.document(collection, id).base;
    try {
      await this.context.fileSystem.stat(path);
      return true;
    } catch (error) {
      if (isNotFound(error)) return false;
      throw toBackendError(error, `stat ${path}`);
    }
  }

  private async prune(directory: string): Promise<void> {
    if (await removeDirectoryIfEmpty(this.context.fileSystem, directory)) {
      // sync() (C1) now owes an fsync of the parent, which holds the removal.
      this.context.durability.forget(directory);
      this.context.durability.markDirty(dirname(directory));
    }
  }
}

/** B7: what a write's index entry needs to hear from the document's write (see `put`). */
export interface WriteHooks {
  /** The write's bytes are visible to readers now (its flush may still fail). */
  onVisible(): void;
  /** A visible write was taken back: what is stored is the document as it was. */
  onTakenBack(): Promise<void>;
}

function isDocumentId(collection: Collection, id: string): boolean {
  try {
    assertDocumentId(collection, id);
    return true;
  } catch {
    return false;
  }
}

function assertWrite(write: DocumentWrite): void {
  if (
    (write.kind !== 'full' && write.kind !== 'delta') ||
    !Number.isSafeInteger(write.revision) ||
    write.revision < 0 ||
    typeof write.text !== 'string'
  ) {
    throw new InvalidInputError('fs adapter: a document write needs a kind, a revision and a text');
  }
}
