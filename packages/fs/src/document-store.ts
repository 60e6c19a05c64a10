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
import { InvalidInputError } from '@keepsake/core';
import { type AdapterContext, makeDirectory, removeDirectoryIfEmpty } from './context.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import { isNotFound, toBackendError } from './errors.js';
import { assertDocumentId, decodeName } from './id-encoding.js';
import { statOptional } from './optional-file.js';
import type { CachedInspection } from './segment-inspection.js';

/**
 * Documents of the `sessions`, `revisions` and `lifecycle` collections: one directory per
 * document holding its base, its deltas and its lock file (see segmented-file.ts). A
 * directory per document keeps each document's directory fsyncs to its own entries: a
 * durable save of one session never makes another session's unsynced rename durable ahead
 * of that session's data.
 */
export class DocumentStore {
  private readonly context: AdapterContext;

  constructor(context: AdapterContext) {
    this.context = context;
  }

  async get(collection: Collection, id: string): Promise<StoredDocument | null> {
    assertDocumentId(collection, id);
    const snapshot = await this.context.segments.read(this.context.layout.document(collection, id));
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

  /** Whether the document's base exists (a corrupt one too: `get` returns its bytes). */
  async has(collection: Collection, id: string): Promise<boolean> {
    assertDocumentId(collection, id);
    const paths = this.context.layout.document(collection, id);
    return (await statOptional(this.context.fileSystem, paths.base)) !== null;
  }

  /**
   * B4: a conditional write under the document's lock file. `onAccepted` runs under the
   * lock once the write passed every check and just before its bytes go down, so work it
   * starts (the index update of B7) overlaps this write's flush; a refused write never
   * calls it.
   */
  async put(
    collection: Collection,
    id: string,
    write: DocumentWrite,
    options: WriteOptions,
    onAccepted?: () => void,
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
        const cached = await segments.inspectCached(paths, held.cache as CachedInspection | null);
        held.cache = cached;
        const inspection = cached.inspection;
        if (inspection.revision !== options.expectedRevision) {
          return { ok: false, currentRevision: inspection.revision };
        }
        held.cache = null;
        if (write.kind === 'full') {
          onAccepted?.();
          held.cache = await segments.writeBase(paths, write.revision, write.text, options.durable);
        } else {
          // A delta extends a readable base; there is none (missing or corrupt) to extend.
          if (inspection.base === null || inspection.revision === null) {
            return { ok: false, currentRevision: inspection.revision };
          }
          // Equal is a rewrite of the same revision (core's flush); lower would never be read.
          if (write.revision < inspection.revision) {
            throw new InvalidInputError(
              `fs adapter: delta revision ${write.revision} of ${collection}/${id} is below the stored ${inspection.revision}`,
            );
          }
          const deltas = [{ revision: write.revision, text: write.text }];
          onAccepted?.();
          const next = await segments.appendDelta(
            paths,
            inspection,
            deltas,
            options.durable,
            cached.deltasInode,
            true,
          );
          held.cache = { ...cached, inspection: next };
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
