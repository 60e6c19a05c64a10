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
import { indexMember } from './index-store.js';
import {
  deleteDocumentScript,
  readDocumentScript,
  writeDocumentScript,
} from './scripts/document-scripts.js';
import { putIndexEntryScript } from './scripts/index-scripts.js';
import { command, type StorageContext } from './storage-context.js';

/**
 * Documents (sessions, retained revisions, lifecycle state): a hash holding the revision
 * `r`, the last full write `b` and the token `w` of the write that made it, plus a list
 * of the deltas appended since (B1, B4, delta saves).
 */
export class DocumentStore {
  private readonly context: StorageContext;

  constructor(context: StorageContext) {
    this.context = context;
  }

  async get(collection: Collection, id: string): Promise<StoredDocument | null> {
    const keys = this.context.keys.document(collection, id);
    const reply = (await this.context.scripts.run(
      readDocumentScript,
      [keys.document, keys.deltas],
      [],
      { operation: `read a document (${collection}/${id})`, durable: false },
    )) as [string, string, string[]] | null;
    if (reply === null) return null;
    const [revisionText, base, deltas] = reply;
    const revision = Number(revisionText);
    // A revision that is not a number makes the document unreadable: core quarantines it
    // (A2) rather than this read guessing.
    return Number.isSafeInteger(revision)
      ? { revision, base, deltas }
      : { revision: 0, base: '', deltas: [] };
  }

  async has(collection: Collection, id: string): Promise<boolean> {
    const key = this.context.keys.document(collection, id).document;
    const { client } = this.context;
    return (await command(`read a document (${collection}/${id})`, () => client.exists(key))) > 0;
  }

  async put(
    collection: Collection,
    id: string,
    write: DocumentWrite,
    options: WriteOptions,
  ): Promise<PutResult> {
    const { keys, scripts, standalone, client } = this.context;
    const documentKeys = keys.document(collection, id);
    const operation = `write a document (${collection}/${id})`;
    const registry = keys.registry(collection);
    const indexEntry = collection === 'sessions' ? options.indexEntry : undefined;
    const scriptKeys = [documentKeys.document, documentKeys.deltas];
    const args: Array<string | number> = [
      write.kind,
      String(write.revision),
      write.text,
      options.expectedRevision === null ? '' : String(options.expectedRevision),
      this.context.nextWriteToken(),
      id,
    ];
    if (standalone) {
      scriptKeys.push(registry);
      if (indexEntry !== undefined) {
        const index = keys.index();
        scriptKeys.push(index.entries, index.positions, index.order, index.exists);
        args.push(indexMember(indexEntry), JSON.stringify(indexEntry));
      }
    } else if (options.expectedRevision === null) {
      // Cluster: the registry lives on another slot. Listed before it exists, so a crash in
      // between leaves an id that reads as absent, never a document nothing lists.
      await command(operation, () => client.zadd(registry, 0, id));
    }
    const reply = (await scripts.run(writeDocumentScript, scriptKeys, args, {
      operation,
      durable: options.durable,
    })) as [number, number?];
    if (reply[0] !== 1) {
      const current = reply[1] ?? -1;
      return { ok: false, currentRevision: current < 0 ? null : current };
    }
    if (standalone || indexEntry === undefined) return { ok: true };
    // Cluster: the document landed; its index entry is a write of its own (B7).
    const index = keys.index();
    try {
      await scripts.run(
        putIndexEntryScript,
        [index.entries, index.positions, index.order, index.exists],
        [id, indexMember(indexEntry), JSON.stringify(indexEntry)],
        { operation: `update the session index (${id})`, durable: options.durable },
      );
      return { ok: true };
    } catch (error) {
      return { ok: true, indexFailure: error as Error };
    }
  }

  async delete(collection: Collection, id: string, options: DeleteOptions): Promise<PutResult> {
    const { keys, scripts, standalone, client } = this.context;
    const documentKeys = keys.document(collection, id);
    const operation = `delete a document (${collection}/${id})`;
    const registry = keys.registry(collection);
    const scriptKeys = [documentKeys.document, documentKeys.deltas];
    if (standalone) scriptKeys.push(registry);
    const reply = (await scripts.run(
      deleteDocumentScript,
      scriptKeys,
      [options.expectedRevision === undefined ? '' : String(options.expectedRevision), id],
      { operation, durable: options.durable },
    )) as [number, number?];
    if (reply[0] !== 1) {
      const current = reply[1] ?? -1;
      return { ok: false, currentRevision: current < 0 ? null : current };
    }
    // Cluster: unlisted once gone (a failure here is reported; the delete can be repeated).
    if (!standalone) await command(operation, () => client.zrem(registry, id));
    return { ok: true };
  }

  async list(collection: Collection, options: ListDocumentsOptions): Promise<IdPage> {
    const registry = this.context.keys.registry(collection);
    const prefix = options.prefix ?? '';
    const start =
      options.cursor !== null ? `(${options.cursor}` : prefix !== '' ? `[${prefix}` : '-';
    // Ids are ASCII below 0x7f, so every id that starts with the prefix sorts before this.
    const end = prefix !== '' ? `[${prefix}\x7f` : '+';
    const ids = await command(`list documents (${collection})`, () =>
      this.context.client.zrangebylex(registry, start, end, 'LIMIT', 0, options.limit + 1),
    );
    const page = ids.slice(0, options.limit);
    return {
      ids: page,
      nextCursor: ids.length > options.limit ? (page.at(-1) ?? null) : null,
    };
  }
}
