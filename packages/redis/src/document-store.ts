import type {
  Collection,
  DeleteOptions,
  DocumentWrite,
  IdPage,
  ListDocumentsOptions,
  PutResult,
  SessionSummary,
  StoredDocument,
  WriteOptions,
} from '@keepsake/core';
import { encodeRecordFields, parseDocument, revisionField, tokenField } from './document-format.js';
import { toKeepsakeError } from './errors.js';
import { indexValue } from './index-store.js';
import type { ScriptRunner, ScriptStep, Step, StepResult } from './script-runner.js';
import { deleteDocumentScript, writeDocumentScript } from './scripts/document-scripts.js';
import { putIndexEntriesIfWrittenScript, putIndexEntryScript } from './scripts/index-scripts.js';
import type { StorageContext } from './storage-context.js';

/**
 * Documents (sessions, retained revisions, lifecycle state): one string each, the last full
 * write followed by the deltas appended since (document-format.ts), written by one
 * conditional script (B1, B4), read with one GET.
 *
 * The collection's id registry (a sorted set read by `listDocuments`) and the session
 * index live under the namespace's own hash tag. Each is its own single write: an id is
 * registered before its document is created and unregistered after it is deleted, so a
 * crash in between leaves an id that reads as absent, never a document nothing lists. On
 * a standalone server they go in the same pipeline as the document's write (one round
 * trip); on Cluster, where they live on another slot, they are sent before or after it.
 */
export class DocumentStore {
  private readonly context: StorageContext;

  constructor(context: StorageContext) {
    this.context = context;
  }

  async get(collection: Collection, id: string): Promise<StoredDocument | null> {
    const { document: key, group } = this.context.keys.document(collection, id);
    const { client } = this.context.lane(group);
    const value = await this.context.command(`read a document (${collection}/${id})`, () =>
      client.getBuffer(key),
    );
    if (value === null) return null;
    // Bytes not in the adapter's format are handed on as they are: core cannot parse them
    // and quarantines them (A2), instead of this read guessing.
    return parseDocument(value) ?? { revision: 0, base: value.toString('utf8'), deltas: [] };
  }

  async has(collection: Collection, id: string): Promise<boolean> {
    const { document: key, group } = this.context.keys.document(collection, id);
    const { client } = this.context.lane(group);
    return (
      (await this.context.command(`read a document (${collection}/${id})`, () =>
        client.exists(key),
      )) > 0
    );
  }

  async put(
    collection: Collection,
    id: string,
    write: DocumentWrite,
    options: WriteOptions,
  ): Promise<PutResult> {
    const { keys, standalone } = this.context;
    const { document: documentKey, group } = keys.document(collection, id);
    const { scripts, client } = this.context.lane(group);
    const tokenText = tokenField(this.context.nextWriteToken());
    const creates = options.expectedRevision === null;
    const revisionText = revisionField(write.revision);
    const writeStep: ScriptStep = {
      script: writeDocumentScript,
      keys: [documentKey],
      args: [
        write.kind,
        revisionText,
        creates ? '' : revisionField(options.expectedRevision),
        tokenText,
        encodeRecordFields(write.kind, revisionText, write.text, tokenText),
      ],
    };
    const indexEntry = collection === 'sessions' ? options.indexEntry : undefined;
    // A save of a session that exists (the common write): its write alone, its index entry
    // in the turn's group (see putAlone).
    if (standalone && !creates && scripts.sendsAlone(options.durable)) {
      return this.putAlone(scripts, collection, id, writeStep, tokenText, indexEntry);
    }
    const operation = writeOperation(collection, id);
    const durable = { operation, durable: options.durable };

    if (standalone) {
      const steps: Step[] = creates
        ? [{ command: 'ZADD', args: [keys.registry(collection), 0, id] }, writeStep]
        : [writeStep];
      const indexStep: ScriptStep | null =
        indexEntry === undefined
          ? null
          : {
              script: putIndexEntriesIfWrittenScript,
              keys: [keys.index(), documentKey],
              args: [tokenText, id, indexValue(indexEntry)],
            };
      // The index entries of the saves of one event-loop turn go in one HSET, sent after
      // their documents' writes; with WAITAOF or WAIT, which must follow the entry too, it
      // ends this save's pipeline instead.
      const grouped = indexStep !== null && scripts.groupsWrites(options.durable);
      if (indexStep !== null && !grouped) steps.push(indexStep);
      const work = scripts.batch(steps, durable);
      // Its reply comes after the write's (same connection, sent after it); should the write
      // fail, the group's outcome is never awaited here (it keeps its failure quiet).
      const groupedOutcome =
        indexStep !== null && grouped
          ? scripts.grouped(indexStep.script, indexStep.keys[0]!, documentKey, indexStep.args)
          : null;
      const results = await work;
      if (creates) throwIfFailed(results[0]!, operation);
      const written = refusalOrSuccess(results[creates ? 1 : 0]!, operation);
      if (!written.ok) return written;
      let indexed = results[creates ? 2 : 1];
      if (groupedOutcome !== null) {
        try {
          indexed = await groupedOutcome;
        } catch (error) {
          throw toKeepsakeError(error, operation);
        }
      }
      if (indexed === undefined || indexed.ok) return written;
      return { ok: true, indexFailure: toKeepsakeError(indexed.error, 'update the session index') };
    }
    if (creates)
      await this.context.command(operation, () => client.zadd(keys.registry(collection), 0, id));
    const written = refusalOrSuccess((await scripts.batch([writeStep], durable))[0]!, operation);
    if (!written.ok || indexEntry === undefined) return written;
    // Cluster: the document landed; its index entry is a write of its own on another slot.
    const indexOperation = `update the session index (${id})`;
    try {
      const [indexed] = await scripts.batch(
        [{ script: putIndexEntryScript, keys: [keys.index()], args: [id, indexValue(indexEntry)] }],
        { operation: indexOperation, durable: options.durable },
      );
      throwIfFailed(indexed!, indexOperation);
      return written;
    } catch (error) {
      return { ok: true, indexFailure: error as Error };
    }
  }

  /**
   * The save path (standalone, a document that exists, confirmed by its reply): the write
   * script sent on its own (`sendAlone`), the index entry added to the turn's shared index
   * call after it (B7: written only if this very write landed), nothing built that a
   * successful write does not need (the operation's name is made only for an error).
   */
  private async putAlone(
    scripts: ScriptRunner,
    collection: Collection,
    id: string,
    writeStep: ScriptStep,
    tokenText: string,
    indexEntry: SessionSummary | undefined,
  ): Promise<PutResult> {
    const work = scripts.sendAlone(writeStep);
    // After sendAlone: a turn that let its writes go there sent its group with them, and
    // this entry must follow its document's write.
    const groupedOutcome =
      indexEntry === undefined
        ? null
        : scripts.grouped(
            putIndexEntriesIfWrittenScript,
            this.context.keys.index(),
            writeStep.keys[0]!,
            [tokenText, id, indexValue(indexEntry)],
          );
    let reply: unknown;
    try {
      reply = await work;
    } catch (error) {
      // The server's refusal of the script, or the connection's failure: typed either way.
      throw toKeepsakeError(error, writeOperation(collection, id));
    }
    const written = putResultOf(reply as [number, number?]);
    if (!written.ok || groupedOutcome === null) return written;
    let indexed: StepResult;
    try {
      indexed = await groupedOutcome;
    } catch (error) {
      throw toKeepsakeError(error, writeOperation(collection, id));
    }
    if (indexed.ok) return written;
    return { ok: true, indexFailure: toKeepsakeError(indexed.error, 'update the session index') };
  }

  async delete(collection: Collection, id: string, options: DeleteOptions): Promise<PutResult> {
    const { keys, standalone } = this.context;
    const { document: documentKey, group } = keys.document(collection, id);
    const { scripts, client } = this.context.lane(group);
    const operation = `delete a document (${collection}/${id})`;
    const deleteStep: Step = {
      script: deleteDocumentScript,
      keys: [documentKey],
      args: [options.expectedRevision === undefined ? '' : revisionField(options.expectedRevision)],
    };
    const unregister = { command: 'ZREM', args: [keys.registry(collection), id] } as const;
    if (standalone && options.expectedRevision === undefined) {
      const results = await scripts.batch([deleteStep, unregister], {
        operation,
        durable: options.durable,
      });
      throwIfFailed(results[1]!, operation);
      return refusalOrSuccess(results[0]!, operation);
    }
    const deleted = refusalOrSuccess(
      (await scripts.batch([deleteStep], { operation, durable: options.durable }))[0]!,
      operation,
    );
    // Unlisted once gone (a failure here is reported; the delete can be repeated).
    if (deleted.ok)
      await this.context.command(operation, () => client.zrem(keys.registry(collection), id));
    return deleted;
  }

  async list(collection: Collection, options: ListDocumentsOptions): Promise<IdPage> {
    const registry = this.context.keys.registry(collection);
    const prefix = options.prefix ?? '';
    const start =
      options.cursor !== null ? `(${options.cursor}` : prefix !== '' ? `[${prefix}` : '-';
    // Ids are ASCII below 0x7f, so every id that starts with the prefix sorts before this.
    const end = prefix !== '' ? `[${prefix}\x7f` : '+';
    const ids = await this.context.command(`list documents (${collection})`, () =>
      this.context.main.client.zrangebylex(registry, start, end, 'LIMIT', 0, options.limit + 1),
    );
    const page = ids.slice(0, options.limit);
    return {
      ids: page,
      nextCursor: ids.length > options.limit ? (page.at(-1) ?? null) : null,
    };
  }
}

function throwIfFailed(result: StepResult, operation: string): void {
  if (!result.ok) throw toKeepsakeError(result.error, operation);
}

/** The write script's reply as a PutResult (a reply error is thrown, typed). */
function refusalOrSuccess(result: StepResult, operation: string): PutResult {
  throwIfFailed(result, operation);
  return putResultOf((result as { value: [number, number?] }).value);
}

function writeOperation(collection: Collection, id: string): string {
  return `write a document (${collection}/${id})`;
}

/** The write script's reply: { 1 } or { 1, 1 } written, { 0, current revision } refused. */
function putResultOf(reply: [number, number?]): PutResult {
  if (reply[0] === 1) return { ok: true };
  const current = reply[1] ?? -1;
  // -2: bytes that are not in the adapter's format; core quarantines them on its next read.
  return { ok: false, currentRevision: current === -1 ? null : Math.max(current, 0) };
}
