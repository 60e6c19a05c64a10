import {
  type AdapterCapabilities,
  type AppendLogResult,
  BackendError,
  type Collection,
  type DeleteOptions,
  type DocumentWrite,
  type IdPage,
  type IndexPage,
  type ListDocumentsOptions,
  type LogReadResult,
  type LogRecordInput,
  type PutResult,
  type QuarantinedDocument,
  type SessionSummary,
  type StorageAdapterV1,
  type StoredDocument,
  type WriteOptions,
} from '@keepsake/core';
import { type KeyValueMap, keys, keysWithPrefix } from './key-value-map.js';

export interface MapAdapterOptions {
  /**
   * The map the data lives in. Adapters given the same map share their data, which is how a
   * test opens "the same backend after a restart" with a second store.
   * @default a new, private map
   */
  map?: KeyValueMap;
}

/**
 * What this adapter can promise, declared so the conformance suite checks each claim (H1).
 * It keeps data for the life of the process only, and it rewrites a whole journal on every
 * append, so it claims neither cheap appends nor delta writes.
 */
export const mapAdapterCapabilities: AdapterCapabilities = {
  durability: 'process',
  // Each compare-and-set below runs in one synchronous step, so no other call can slip in
  // between the check and the write. A remote key-value store would need its own CAS.
  conditionalWrites: true,
  sharedAcrossProcesses: false,
  appendDeltas: false,
  nativeAppend: false,
  groupCommit: false,
  clusterSafeKeys: false,
  gaps: [],
};

/**
 * An example third-party adapter: every primitive of StorageAdapterV1 mapped onto a plain
 * string key-value map. It implements storage only; revisions' meaning, recovery, the
 * journal's rules and the memory lifecycle all live in `@keepsake/core`.
 */
export function mapAdapter(options: MapAdapterOptions = {}): StorageAdapterV1 {
  return new MapAdapter(options.map ?? new Map());
}

/** A stored document is one value: its revision on the first line, the JSON text after it. */
function encodeDocument(revision: number, text: string): string {
  return `${revision}\n${text}`;
}

function decodeDocument(value: string): { revision: number; text: string } | null {
  const newline = value.indexOf('\n');
  const revision = Number(value.slice(0, newline));
  if (newline < 0 || !Number.isSafeInteger(revision) || revision < 0) return null;
  return { revision, text: value.slice(newline + 1) };
}

function compareSummaries(left: SessionSummary, right: SessionSummary): number {
  if (left.updatedAt !== right.updatedAt) return right.updatedAt - left.updatedAt;
  return left.id < right.id ? -1 : left.id > right.id ? 1 : 0;
}

class MapAdapter implements StorageAdapterV1 {
  readonly specificationVersion = 'v1' as const;
  readonly name = 'example-map';
  readonly capabilities = mapAdapterCapabilities;
  private closed = false;

  constructor(private readonly map: KeyValueMap) {}

  async open(): Promise<void> {
    // Nothing to sweep: a write to a map never leaves a temp entry behind (B2).
  }

  private assertOpen(operation: string): void {
    if (this.closed) throw new BackendError(this.name, `${operation} (the adapter is closed)`);
  }

  /** The stored revision of a document, or null when absent. */
  private readDocument(
    collection: Collection,
    id: string,
  ): { revision: number; text: string } | null {
    const value = this.map.get(keys.document(collection, id));
    if (value === undefined) return null;
    const document = decodeDocument(value);
    // A damaged header is a failure of this medium, not a document that does not parse, so it
    // is a backend error and never "not found" (A2).
    if (document === null)
      throw new BackendError(this.name, `read ${collection}/${id}: bad header`);
    return document;
  }

  async getDocument(collection: Collection, id: string): Promise<StoredDocument | null> {
    this.assertOpen('read a document');
    const document = this.readDocument(collection, id);
    return document === null
      ? null
      : { revision: document.revision, base: document.text, deltas: [] };
  }

  async hasDocument(collection: Collection, id: string): Promise<boolean> {
    this.assertOpen('read a document');
    return this.map.has(keys.document(collection, id));
  }

  async putDocument(
    collection: Collection,
    id: string,
    write: DocumentWrite,
    options: WriteOptions,
  ): Promise<PutResult> {
    this.assertOpen('write a document');
    const currentRevision = this.readDocument(collection, id)?.revision ?? null;
    if (currentRevision !== options.expectedRevision) return { ok: false, currentRevision };
    if (write.kind === 'delta') {
      // Core sends deltas only to adapters that declare `appendDeltas`; refusing one here keeps
      // a caller's mistake from being stored as a whole document.
      throw new BackendError(
        this.name,
        `write ${collection}/${id}: delta writes are not supported`,
      );
    }
    this.map.set(keys.document(collection, id), encodeDocument(write.revision, write.text));
    return { ok: true };
  }

  async deleteDocument(
    collection: Collection,
    id: string,
    options: DeleteOptions,
  ): Promise<PutResult> {
    this.assertOpen('delete a document');
    const currentRevision = this.readDocument(collection, id)?.revision ?? null;
    if (options.expectedRevision !== undefined && currentRevision !== options.expectedRevision) {
      return { ok: false, currentRevision };
    }
    this.map.delete(keys.document(collection, id));
    return { ok: true };
  }

  async listDocuments(collection: Collection, options: ListDocumentsOptions): Promise<IdPage> {
    this.assertOpen('list documents');
    const collectionPrefix = keys.documentPrefix(collection);
    const ids = keysWithPrefix(this.map, collectionPrefix + (options.prefix ?? '')).map((key) =>
      key.slice(collectionPrefix.length),
    );
    const after = options.cursor;
    const remaining = after === null ? ids : ids.filter((id) => id > after);
    const page = remaining.slice(0, options.limit);
    const last = page.at(-1);
    return {
      ids: page,
      nextCursor: remaining.length > page.length && last !== undefined ? last : null,
    };
  }

  async quarantineDocument(collection: Collection, id: string, reason: string): Promise<string> {
    this.assertOpen('quarantine a document');
    const key = keys.document(collection, id);
    const quarantine = this.readQuarantine();
    const location = `map://quarantine/${collection}/${id}/${quarantine.length + 1}`;
    const bytes = this.map.get(key);
    // The bytes are kept exactly as stored, header included, so nothing is lost (A2).
    if (bytes !== undefined) this.map.set(keys.quarantined(location), bytes);
    this.map.delete(key);
    quarantine.push({ collection, id, location, reason, quarantinedAt: Date.now() });
    this.map.set(keys.quarantineList, JSON.stringify(quarantine));
    return location;
  }

  async listQuarantined(): Promise<QuarantinedDocument[]> {
    this.assertOpen('list quarantined documents');
    return this.readQuarantine();
  }

  private readQuarantine(): QuarantinedDocument[] {
    const value = this.map.get(keys.quarantineList);
    return value === undefined ? [] : (JSON.parse(value) as QuarantinedDocument[]);
  }

  // The index is one value holding every summary: O(sessions) per update, which is fine for
  // an example and is why a production adapter keeps one entry per session instead.
  private readIndex(): IndexPage | SessionSummary[] {
    const value = this.map.get(keys.index);
    if (value === undefined) return { status: 'missing' };
    try {
      const parsed: unknown = JSON.parse(value);
      if (Array.isArray(parsed)) return parsed as SessionSummary[];
      return { status: 'corrupt', reason: 'the index is not a JSON array' };
    } catch (error) {
      return { status: 'corrupt', reason: `the index is not JSON: ${String(error)}` };
    }
  }

  private writeIndex(entries: SessionSummary[]): void {
    this.map.set(keys.index, JSON.stringify(entries));
  }

  async putIndexEntry(summary: SessionSummary): Promise<void> {
    this.assertOpen('write the index');
    const index = this.readIndex();
    const entries = Array.isArray(index) ? index.filter((entry) => entry.id !== summary.id) : [];
    this.writeIndex([...entries, summary]);
  }

  async deleteIndexEntry(id: string): Promise<void> {
    this.assertOpen('write the index');
    const index = this.readIndex();
    if (Array.isArray(index)) this.writeIndex(index.filter((entry) => entry.id !== id));
  }

  async replaceIndex(summaries: SessionSummary[]): Promise<void> {
    this.assertOpen('write the index');
    this.writeIndex(summaries);
  }

  async listIndex(options: { cursor: string | null; limit: number }): Promise<IndexPage> {
    this.assertOpen('read the index');
    const index = this.readIndex();
    if (!Array.isArray(index)) return index;
    const sorted = [...index].sort(compareSummaries);
    let start = 0;
    if (options.cursor !== null) {
      const separator = options.cursor.indexOf(':');
      const after = {
        updatedAt: Number(options.cursor.slice(0, separator)),
        id: options.cursor.slice(separator + 1),
      } as SessionSummary;
      start = sorted.findIndex((entry) => compareSummaries(entry, after) > 0);
      if (start < 0) start = sorted.length;
    }
    const page = sorted.slice(start, start + options.limit);
    const last = page.at(-1);
    const more = start + page.length < sorted.length && last !== undefined;
    return {
      status: 'ok',
      entries: page,
      nextCursor: more ? `${last.updatedAt}:${last.id}` : null,
    };
  }

  private readRecords(sessionId: string, runId: string): LogRecordInput[] | null {
    const value = this.map.get(keys.log(sessionId, runId));
    return value === undefined ? null : (JSON.parse(value) as LogRecordInput[]);
  }

  async appendLog(
    sessionId: string,
    runId: string,
    records: LogRecordInput[],
  ): Promise<AppendLogResult> {
    this.assertOpen('append to a journal');
    const stored = this.readRecords(sessionId, runId) ?? [];
    const lastSequence = stored.at(-1)?.sequence ?? 0;
    const first = records[0];
    if (first === undefined) return { ok: true };
    // Only the next sequence is accepted, so two writers can never interleave (E2).
    if (first.sequence !== lastSequence + 1) return { ok: false, lastSequence };
    const appended = records.map(({ sequence, text }) => ({ sequence, text }));
    this.map.set(keys.log(sessionId, runId), JSON.stringify([...stored, ...appended]));
    return { ok: true };
  }

  async readLog(
    sessionId: string,
    runId: string,
    options: { afterSequence: number; limit: number },
  ): Promise<LogReadResult> {
    this.assertOpen('read a journal');
    const stored = this.readRecords(sessionId, runId);
    if (stored === null) return { exists: false, records: [], tornTail: false };
    const records = stored.filter((record) => record.sequence > options.afterSequence);
    // A map value is replaced whole, so a journal here can never end in a torn record (E3).
    return { exists: true, records: records.slice(0, options.limit), tornTail: false };
  }

  async listLogs(sessionId: string): Promise<string[]> {
    this.assertOpen('list journals');
    const prefix = keys.logPrefix(sessionId);
    return keysWithPrefix(this.map, prefix).map((key) => key.slice(prefix.length));
  }

  async deleteLogs(sessionId: string): Promise<void> {
    this.assertOpen('delete journals');
    for (const key of keysWithPrefix(this.map, keys.logPrefix(sessionId))) this.map.delete(key);
  }

  async deleteLog(sessionId: string, runId: string): Promise<void> {
    this.assertOpen('delete a journal');
    this.map.delete(keys.log(sessionId, runId));
  }

  async sync(): Promise<void> {
    // `process` durability: every write is already as durable as this medium gets (C1).
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}
