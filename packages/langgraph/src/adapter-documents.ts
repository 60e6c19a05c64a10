import type { Collection, StorageAdapter } from '@keepsake/core';
import type { z } from 'zod';
import { parseDocument } from './documents.js';
import { CheckpointConflictError, CorruptCheckpointError } from './errors.js';

/** The saver's two collections (see `COLLECTIONS` in @keepsake/core). */
export type SaverCollection = Extract<Collection, 'checkpoints' | 'checkpoint-writes'>;

const PAGE = 1000;
/** How often `replace` re-reads and retries when other writers keep replacing a document. */
export const REPLACE_ATTEMPTS = 16;
/** Reads in flight at once when a listing or a tuple needs many documents. */
export const READ_CONCURRENCY = 16;
/** How many checkpoint ids `exists` remembers as stored before it starts over. */
const KNOWN_PRESENT_LIMIT = 4096;

/**
 * The adapter primitives the saver uses, and nothing backend-specific: conditional writes
 * (B4), atomic documents (B1), durable writes when asked (B3), prefix listings, quarantine
 * of what does not parse (A2).
 */
export class AdapterDocuments {
  readonly adapter: StorageAdapter;
  private readonly durable: boolean;
  /**
   * Checkpoints this instance read, wrote or found stored since, so `exists` asks the backend
   * once per checkpoint a `put` points at, not once per `put`. A checkpoint read as missing or
   * quarantined here leaves the set; one quarantined by another process may stay in it (a read
   * of a checkpoint pointing at it then fails typed, see saver.ts).
   */
  private readonly knownPresent = new Set<string>();

  constructor(adapter: StorageAdapter, durable: boolean) {
    this.adapter = adapter;
    this.durable = durable;
  }

  /** The parsed document, null when absent. A damaged one is quarantined, then thrown. */
  async read<T>(collection: SaverCollection, id: string, schema: z.ZodType<T>): Promise<T | null> {
    return (await this.readRevisioned(collection, id, schema))?.document ?? null;
  }

  /** `read`, with the revision a conditional write over the document must name. */
  async readRevisioned<T>(
    collection: SaverCollection,
    id: string,
    schema: z.ZodType<T>,
  ): Promise<{ document: T; revision: number } | null> {
    const stored = await this.adapter.getDocument(collection, id);
    if (stored === null) {
      this.forget(collection, id);
      return null;
    }
    // The saver writes every document in full: a delta would be someone else's bytes.
    const parsed =
      stored.deltas.length > 0
        ? { ok: false as const, reason: 'holds deltas, which the saver never writes' }
        : parseDocument(schema, stored.base);
    if (!parsed.ok) return this.quarantine(collection, id, parsed.reason);
    this.remember(collection, id);
    return { document: parsed.document, revision: stored.revision };
  }

  /** Whether a checkpoint is stored: remembered, or asked once (a stat, EXISTS, HEAD). */
  async exists(collection: SaverCollection, id: string): Promise<boolean> {
    if (collection === 'checkpoints' && this.knownPresent.has(id)) return true;
    const found = await this.adapter.hasDocument(collection, id);
    if (found) this.remember(collection, id);
    return found;
  }

  /** A2: moves the document aside (never deletes it) and throws the typed error. */
  async quarantine(collection: SaverCollection, id: string, reason: string): Promise<never> {
    this.forget(collection, id);
    const location = await this.adapter.quarantineDocument(collection, id, reason);
    throw new CorruptCheckpointError(collection, id, location, reason);
  }

  /**
   * Creates the document unless it exists; the first write wins (what a retry, or another
   * instance writing the same immutable document, meets). Returns whether this call wrote.
   */
  async create(collection: SaverCollection, id: string, text: string): Promise<boolean> {
    const result = await this.adapter.putDocument(
      collection,
      id,
      { kind: 'full', revision: 1, text },
      { expectedRevision: null, durable: this.durable },
    );
    if (result.ok) this.remember(collection, id);
    return result.ok;
  }

  /** Writes the document if it is still at `expectedRevision` (null: absent). */
  async replaceAt(
    collection: SaverCollection,
    id: string,
    text: string,
    expectedRevision: number | null,
  ): Promise<boolean> {
    const result = await this.adapter.putDocument(
      collection,
      id,
      { kind: 'full', revision: (expectedRevision ?? 0) + 1, text },
      { expectedRevision, durable: this.durable },
    );
    if (result.ok) this.remember(collection, id);
    return result.ok;
  }

  /**
   * Creates or replaces the document with a conditional write (B4): a writer that lost the
   * race re-reads the revision and tries again, so two writers never interleave inside one
   * document and the last write is whole.
   */
  async replace(collection: SaverCollection, id: string, text: string): Promise<void> {
    let expected: number | null = null;
    for (let attempt = 0; attempt < REPLACE_ATTEMPTS; attempt++) {
      const result = await this.adapter.putDocument(
        collection,
        id,
        { kind: 'full', revision: (expected ?? 0) + 1, text },
        { expectedRevision: expected, durable: this.durable },
      );
      if (result.ok) {
        this.remember(collection, id);
        return;
      }
      expected = result.currentRevision;
    }
    throw new CheckpointConflictError(`${collection}/${id}`, REPLACE_ATTEMPTS);
  }

  async delete(collection: SaverCollection, id: string): Promise<void> {
    this.forget(collection, id);
    await this.adapter.deleteDocument(collection, id, { durable: this.durable });
  }

  private remember(collection: SaverCollection, id: string): void {
    if (collection !== 'checkpoints') return;
    if (this.knownPresent.size >= KNOWN_PRESENT_LIMIT) this.knownPresent.clear();
    this.knownPresent.add(id);
  }

  private forget(collection: SaverCollection, id: string): void {
    if (collection === 'checkpoints') this.knownPresent.delete(id);
  }

  /** Every id under `prefix` (the whole collection without one), page by page. */
  async list(collection: SaverCollection, prefix?: string): Promise<string[]> {
    const ids: string[] = [];
    let cursor: string | null = null;
    do {
      const page = await this.adapter.listDocuments(collection, {
        ...(prefix === undefined ? {} : { prefix }),
        cursor,
        limit: PAGE,
      });
      // Adapters honour the prefix (B5); checking again costs nothing and keeps threads apart.
      for (const id of page.ids) if (prefix === undefined || id.startsWith(prefix)) ids.push(id);
      cursor = page.nextCursor;
    } while (cursor !== null);
    return ids;
  }
}

/** Maps `items` with at most `concurrency` calls in flight, keeping the order. */
export async function mapConcurrently<T, R>(
  items: readonly T[],
  concurrency: number,
  map: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await map(items[index] as T, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
  return results;
}
