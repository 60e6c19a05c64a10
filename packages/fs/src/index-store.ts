import type { IndexPage, SessionSummary } from '@keepsake/core';
import { InvalidInputError } from '@keepsake/core';
import { type AdapterContext, makeDirectory } from './context.js';
import { decodeIndexCursor, encodeCursor } from './cursor.js';
import { isNotFound, toBackendError } from './errors.js';

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

export class IndexStore {
  private readonly context: AdapterContext;

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
    if (sessionNames.length > 0) return;
    await this.withLock(async () => {
      const inspection = await segments.inspect(paths);
      if (inspection.base === null && inspection.corrupt === null) {
        await segments.writeBase(paths, 1, '[]', false, { entries: 0 });
      }
    });
  }

  async put(summary: SessionSummary, durable: boolean): Promise<void> {
    const entry = summary as unknown;
    if (!isEntry(entry)) {
      throw new InvalidInputError(
        'fs adapter: an index entry needs a string id and a numeric updatedAt',
      );
    }
    await this.apply({ put: summary }, durable);
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
    await this.withLock(async () => {
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

  private async apply(operation: IndexOperation, durable: boolean): Promise<void> {
    const { segments, layout } = this.context;
    const paths = layout.index;
    await this.withLock(async () => {
      const inspection = await segments.inspect(paths);
      if (inspection.base === null || inspection.revision === null) return;
      const entries = Number(inspection.base.header.entries ?? 0);
      const threshold = Math.max(MIN_DELTAS_BEFORE_COMPACTION, Math.floor(entries / 2));
      const revision = inspection.revision + 1;
      if (inspection.deltaCount < threshold) {
        await segments.appendDelta(paths, inspection, revision, JSON.stringify(operation), durable);
        return;
      }
      const snapshot = await segments.read(paths);
      if (snapshot.base.status !== 'ok') return;
      const texts = [...snapshot.deltas.map((delta) => delta.text), JSON.stringify(operation)];
      const folded = fold(snapshot.base.text, texts);
      if (typeof folded === 'string') return;
      const compacted = [...folded.values()];
      await segments.writeBase(paths, revision, JSON.stringify(compacted), durable, {
        entries: compacted.length,
      });
    });
  }

  private withLock(action: () => Promise<void>): Promise<void> {
    const { locks, layout, fileSystem } = this.context;
    const paths = layout.index;
    return locks.withLock(paths.lock, () => makeDirectory(fileSystem, paths.directory), action);
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
