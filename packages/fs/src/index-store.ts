import type { IndexPage, SessionSummary } from '@keepsake/core';
import { InvalidInputError } from '@keepsake/core';
import { type AdapterContext, makeDirectory } from './context.js';
import { decodeIndexCursor, encodeCursor } from './cursor.js';
import { isNotFound, toBackendError } from './errors.js';
import type { HeldLock } from './file-lock.js';
import { decodeName } from './id-encoding.js';
import type { CachedInspection } from './segment-inspection.js';

/**
 * B7: the session index as a base (a JSON array of summaries) plus deltas (`{"put": …}`,
 * `{"delete": id}`), the same machinery as documents. A put costs one small append; the
 * base is rewritten once the deltas outnumber half its entries (at least 64), so writes
 * stay O(1) amortized however many sessions there are.
 *
 * A missing or corrupt index is never patched by a put or a delete: an index holding only
 * the sessions saved since would hide every other session. Such puts are dropped, `listIndex`
 * reports `missing` or `corrupt`, and core rebuilds the whole index from the documents.
 */
const MIN_DELTAS_BEFORE_COMPACTION = 64;

type IndexOperation = { put: SessionSummary } | { delete: string };

interface IndexEntry {
  readonly id: string;
  readonly updatedAt: number;
}

interface QueuedUpdate {
  readonly operation: IndexOperation;
  readonly durable: boolean;
  resolve(): void;
  reject(error: unknown): void;
}

/** Most index updates one group commit writes. */
const MAX_BATCH = 256;

export class IndexStore {
  private readonly context: AdapterContext;
  private queue: QueuedUpdate[] = [];
  private running: Promise<void> | null = null;

  constructor(context: AdapterContext) {
    this.context = context;
  }

  /** A store opened on an empty directory starts with an empty index, not a missing one. */
  async initializeIfFresh(): Promise<void> {
    const { fileSystem, layout, segments } = this.context;
    const paths = layout.index;
    if ((await segments.readOptional(paths.base)) !== null) return;
    let sessionNames: string[];
    try {
      sessionNames = await fileSystem.readdir(layout.collectionDirectory('sessions'));
    } catch (error) {
      if (!isNotFound(error)) throw toBackendError(error, 'list sessions');
      sessionNames = [];
    }
    // H1: only names of this store's session directories count; another store may live
    // in `sessions/` (a store on `<root>/sessions/x`) and is not a session of this one.
    if (sessionNames.some((name) => decodeName(name) !== null)) return;
    await this.withLock(async (held) => {
      held.cache = null;
      const inspection = await segments.inspect(paths);
      if (inspection.base === null && inspection.corrupt === null) {
        await segments.writeBase(paths, 1, '[]', false, { entries: 0 });
      }
    });
  }

  /**
   * Queues the put synchronously (before the first await), so callers that start puts in
   * order, under a document's lock, have them applied in that order.
   */
  put(summary: SessionSummary, durable: boolean): Promise<void> {
    try {
      assertIndexEntry(summary);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.apply({ put: summary }, durable);
  }

  async delete(id: string, durable: boolean): Promise<void> {
    await this.apply({ delete: id }, durable);
  }

  async replace(summaries: SessionSummary[], durable: boolean): Promise<void> {
    const byId = new Map<string, SessionSummary>();
    for (const summary of summaries) {
      if (!isEntry(summary)) {
        throw new InvalidInputError(
          'fs adapter: an index entry needs a string id and a numeric updatedAt',
        );
      }
      byId.set(summary.id, summary);
    }
    const { segments, layout } = this.context;
    // Updates asked for before the rebuild are applied before it, as they were asked.
    while (this.running) await this.running;
    await this.withLock(async (held) => {
      held.cache = null;
      const inspection = await segments.inspect(layout.index);
      const revision = (inspection.revision ?? 0) + 1;
      const entries = [...byId.values()];
      await segments.writeBase(layout.index, revision, JSON.stringify(entries), durable, {
        entries: entries.length,
      });
    });
  }

  async list(cursor: string | null, limit: number): Promise<IndexPage> {
    const snapshot = await this.context.segments.read(this.context.layout.index);
    const base = snapshot.base;
    if (base.status === 'missing') return { status: 'missing' };
    if (base.status === 'corrupt')
      return { status: 'corrupt', reason: 'the index file fails its checksum' };
    const folded = fold(
      base.text,
      snapshot.deltas.map((delta) => delta.text),
    );
    if (typeof folded === 'string') return { status: 'corrupt', reason: folded };
    const entries = [...folded.values()].sort(compareEntries);
    let start = 0;
    if (cursor !== null) {
      const [updatedAt, id] = decodeIndexCursor(cursor);
      const position = { updatedAt, id };
      while (
        start < entries.length &&
        compareEntries(entries[start] as IndexEntry, position) <= 0
      ) {
        start++;
      }
    }
    const page = entries.slice(start, start + limit);
    const last = page.at(-1);
    const more = start + limit < entries.length;
    return {
      status: 'ok',
      entries: page,
      nextCursor: more && last ? encodeCursor([last.updatedAt, last.id]) : null,
    };
  }

  /**
   * Index updates are group-committed: the updates that arrive while one batch is written
   * form the next batch, written as one append (one write, one fdatasync when any of them is
   * durable) under one hold of the lock, so concurrent saves and `flushAll` share flushes.
   * Each update resolves only once its batch is written (durably, when it asked to be).
   */
  private apply(operation: IndexOperation, durable: boolean): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ operation, durable, resolve, reject });
      this.startPump();
    });
  }

  private startPump(): void {
    if (this.running !== null) return;
    this.running = this.pump().finally(() => {
      this.running = null;
      // An update queued after the pump's last look at the queue, but before this ran (it
      // saw `running` still set), would otherwise wait forever: a save hung this way.
      if (this.queue.length > 0) this.startPump();
    });
  }

  private async pump(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, MAX_BATCH);
      try {
        await this.applyBatch(
          batch.map((update) => update.operation),
          batch.some((update) => update.durable),
        );
        for (const update of batch) update.resolve();
      } catch (error) {
        for (const update of batch) update.reject(error);
      }
    }
  }

  private async applyBatch(operations: IndexOperation[], durable: boolean): Promise<void> {
    const { segments, layout } = this.context;
    const paths = layout.index;
    await this.withLock(async (held) => {
      const cached = await segments.inspectCached(paths, held.cache as CachedInspection | null);
      held.cache = cached;
      const inspection = cached.inspection;
      if (inspection.base === null || inspection.revision === null) return;
      const entries = Number(inspection.base.header.entries ?? 0);
      const threshold = Math.max(MIN_DELTAS_BEFORE_COMPACTION, Math.floor(entries / 2));
      const first = inspection.revision + 1;
      const texts = operations.map((operation) => JSON.stringify(operation));
      held.cache = null;
      if (inspection.deltaCount + texts.length <= threshold) {
        const deltas = texts.map((text, index) => ({ revision: first + index, text }));
        const next = await segments.appendDelta(
          paths,
          inspection,
          deltas,
          durable,
          cached.deltasInode,
          true,
        );
        held.cache = { ...cached, inspection: next };
        return;
      }
      const snapshot = await segments.read(paths);
      if (snapshot.base.status !== 'ok') return;
      const folded = fold(snapshot.base.text, [
        ...snapshot.deltas.map((delta) => delta.text),
        ...texts,
      ]);
      if (typeof folded === 'string') return;
      const compacted = [...folded.values()];
      const revision = first + texts.length - 1;
      held.cache = await segments.writeBase(paths, revision, JSON.stringify(compacted), durable, {
        entries: compacted.length,
      });
    });
  }

  /** Under the index's lock, leased: a busy store keeps it between updates. */
  private withLock(action: (held: HeldLock) => Promise<void>): Promise<void> {
    const { locks, layout, fileSystem } = this.context;
    const paths = layout.index;
    return locks.withLeasedLock(
      paths.lock,
      () => makeDirectory(fileSystem, paths.directory),
      async (held) => {
        try {
          await action(held);
        } catch (error) {
          held.cache = null;
          throw error;
        }
      },
    );
  }
}

/** The entries by id after applying the deltas, or the reason the index cannot be read. */
function fold(baseText: string, deltaTexts: string[]): Map<string, IndexEntry> | string {
  let base: unknown;
  try {
    base = JSON.parse(baseText);
  } catch {
    return 'the index file is not JSON';
  }
  if (!Array.isArray(base)) return 'the index file is not a list';
  const entries = new Map<string, IndexEntry>();
  for (const entry of base) {
    if (!isEntry(entry)) return 'an index entry has no id or updatedAt';
    entries.set(entry.id, entry);
  }
  for (const text of deltaTexts) {
    let operation: unknown;
    try {
      operation = JSON.parse(text);
    } catch {
      return 'an index delta is not JSON';
    }
    if (typeof operation !== 'object' || operation === null)
      return 'an index delta is not an object';
    if ('put' in operation && isEntry(operation.put)) entries.set(operation.put.id, operation.put);
    else if ('delete' in operation && typeof operation.delete === 'string')
      entries.delete(operation.delete);
    else return 'an index delta is neither a put nor a delete';
  }
  return entries;
}

/** Throws InvalidInputError unless `summary` has what the index sorts and keys by. */
export function assertIndexEntry(summary: SessionSummary): void {
  if (!isEntry(summary as unknown)) {
    throw new InvalidInputError(
      'fs adapter: an index entry needs a string id and a numeric updatedAt',
    );
  }
}

function isEntry(value: unknown): value is IndexEntry {
  if (typeof value !== 'object' || value === null) return false;
  const entry = value as Record<string, unknown>;
  return typeof entry.id === 'string' && typeof entry.updatedAt === 'number';
}

/** Newest first, then by id. */
function compareEntries(left: IndexEntry, right: IndexEntry): number {
  if (left.updatedAt !== right.updatedAt) return right.updatedAt - left.updatedAt;
  return left.id < right.id ? -1 : left.id > right.id ? 1 : 0;
}
