import type { IndexPage, SessionSummary } from '@keepsake/core';
import {
  deleteIndexEntryScript,
  fillIndexBuildScript,
  listIndexScript,
  putIndexEntryScript,
  swapIndexBuildScript,
} from './scripts/index-scripts.js';
import type { StorageContext } from './storage-context.js';

/** Entries per script call of a rebuild: big enough to be quick, small enough not to block. */
const BUILD_CHUNK = 500;

/**
 * An entry's member in the index order: `updatedAt` inverted and zero-padded, then the id,
 * so the lexicographic order of the sorted set is newest first, then id ascending (B7).
 */
export function indexMember(summary: SessionSummary): string {
  const updatedAt = Math.min(Math.max(Math.floor(summary.updatedAt), 0), Number.MAX_SAFE_INTEGER);
  const inverted = (Number.MAX_SAFE_INTEGER - updatedAt).toString().padStart(16, '0');
  return `${inverted}:${summary.id}`;
}

/**
 * The session index (B7), under the namespace's own hash tag: one slot for the whole
 * namespace, so a page is one script call and a rebuild swaps in atomically. The price is
 * that every save's index entry goes to that one slot (see the README on Cluster).
 */
export class IndexStore {
  private readonly context: StorageContext;

  constructor(context: StorageContext) {
    this.context = context;
  }

  async put(summary: SessionSummary, durable: boolean): Promise<void> {
    const index = this.context.keys.index();
    await this.context.scripts.run(
      putIndexEntryScript,
      [index.entries, index.positions, index.order, index.exists],
      [summary.id, indexMember(summary), JSON.stringify(summary)],
      { operation: `update the session index (${summary.id})`, durable },
    );
  }

  async delete(id: string, durable: boolean): Promise<void> {
    const index = this.context.keys.index();
    await this.context.scripts.run(
      deleteIndexEntryScript,
      [index.entries, index.positions, index.order],
      [id],
      { operation: `update the session index (${id})`, durable },
    );
  }

  /** Writes the new index under build keys, chunk by chunk, then swaps it in at once. */
  async replace(summaries: readonly SessionSummary[], durable: boolean): Promise<void> {
    const live = this.context.keys.index();
    const build = this.context.keys.indexBuild(this.context.nextWriteToken());
    const operation = 'rebuild the session index';
    for (let start = 0; start < summaries.length; start += BUILD_CHUNK) {
      const args = summaries
        .slice(start, start + BUILD_CHUNK)
        .flatMap((summary) => [summary.id, indexMember(summary), JSON.stringify(summary)]);
      await this.context.scripts.run(
        fillIndexBuildScript,
        [build.entries, build.positions, build.order],
        args,
        { operation, durable: false },
      );
    }
    await this.context.scripts.run(
      swapIndexBuildScript,
      [
        build.entries,
        build.positions,
        build.order,
        live.entries,
        live.positions,
        live.order,
        live.exists,
      ],
      [],
      { operation, durable },
    );
  }

  async list(options: { cursor: string | null; limit: number }): Promise<IndexPage> {
    const index = this.context.keys.index();
    const reply = (await this.context.scripts.run(
      listIndexScript,
      [index.entries, index.order, index.exists],
      [options.cursor === null ? '-' : `(${options.cursor}`, options.limit],
      { operation: 'read the session index', durable: false },
    )) as [string[], Array<string | null>] | null;
    if (reply === null) return { status: 'missing' };
    const [members, texts] = reply;
    const entries: unknown[] = [];
    for (const [position, text] of texts.slice(0, options.limit).entries()) {
      if (text === null) {
        return { status: 'corrupt', reason: `index entry ${members[position]} has no summary` };
      }
      try {
        entries.push(JSON.parse(text));
      } catch {
        return { status: 'corrupt', reason: `index entry ${members[position]} is not JSON` };
      }
    }
    const nextCursor = members.length > options.limit ? (members[options.limit - 1] ?? null) : null;
    return { status: 'ok', entries, nextCursor };
  }
}
