import type { IndexPage, SessionSummary } from '@keepsake/core';
import { inBatches } from './in-batches.js';
import type { ListedObject } from './requests.js';
import type { StorageContext } from './storage-context.js';

/** GETs of entry bodies a listing makes at once. */
const READS_AT_ONCE = 16;

interface Entry {
  readonly sessionId: string;
  readonly updatedAt: number;
  readonly key: string;
  readonly lastModified: number;
}

/**
 * B7: the session index as one small object per entry, `index/<sessionId>/<updatedAt>`,
 * holding the summary, plus `index/.present` saying the index exists (a missing index is
 * reported, never restarted by a put).
 *
 * Writing an entry is one PUT; an entry never changes key in place, so a save that moves
 * `updatedAt` leaves the session's older entry behind. A listing LISTs every key under
 * `index/` (one request per 1000 keys: S3 LIST is strongly consistent, so it sees every
 * entry written before it), keeps each session's newest entry (the one written last, by the
 * server's LastModified; then the larger updatedAt), removes the older ones in one
 * DeleteObjects request, sorts by updatedAt descending then id, and GETs the page's
 * summaries. So a page of `limit` entries costs ⌈keys/1000⌉ LISTs + `limit` GETs (+1
 * DeleteObjects when older entries were left), and core adds one HEAD per entry (B7's
 * check that the document exists).
 */
export class IndexStore {
  /** Whether the index exists, as this adapter last saw; null until `start()`. */
  private present: boolean | null = null;

  private readonly context: StorageContext;

  constructor(context: StorageContext) {
    this.context = context;
  }

  /** At open: a namespace without sessions starts with an empty index (nothing to rebuild). */
  async start(): Promise<void> {
    const { requests, keys } = this.context;
    if ((await requests.head(keys.indexPresent, 'read the index')) !== null) {
      this.present = true;
      return;
    }
    const sessions = await requests.list(
      keys.documentPrefix('sessions'),
      { maxKeys: 1 },
      'list documents',
    );
    if (sessions.objects.length === 0) {
      await this.markPresent();
      return;
    }
    this.present = false;
  }

  /** B7: an index found missing stays missing (the entry is dropped) until core rebuilds it. */
  async put(summary: SessionSummary): Promise<void> {
    if (!(await this.exists())) return;
    const { requests, keys } = this.context;
    await requests.put(
      keys.indexEntry(summary.id, summary.updatedAt),
      JSON.stringify(summary),
      {},
      'write the index',
    );
  }

  /** Removes every entry of the session: one LIST and one DeleteObjects. */
  async delete(sessionId: string): Promise<void> {
    const { requests, keys } = this.context;
    const entries = await requests.listAll(keys.indexEntriesOf(sessionId), 'write the index');
    await requests.deleteMany(
      entries.map((entry) => entry.key),
      'write the index',
    );
  }

  /**
   * Rebuild: the marker goes first, so a reader meanwhile sees the index missing (and
   * rebuilds too, which is idempotent) rather than a partial one; then the old entries, the
   * new ones, and the marker again.
   */
  async replace(summaries: readonly SessionSummary[]): Promise<void> {
    const { requests, keys } = this.context;
    this.present = false;
    await requests.delete(keys.indexPresent, 'rebuild the index');
    const old = await requests.listAll(keys.indexEntries, 'rebuild the index');
    await requests.deleteMany(
      old.map((entry) => entry.key),
      'rebuild the index',
    );
    await inBatches(summaries, READS_AT_ONCE, (summary) =>
      requests.put(
        keys.indexEntry(summary.id, summary.updatedAt),
        JSON.stringify(summary),
        {},
        'rebuild the index',
      ),
    );
    await this.markPresent();
  }

  async list(options: { cursor: string | null; limit: number }): Promise<IndexPage> {
    const { requests, keys } = this.context;
    const listed = await requests.listAll(keys.indexEntries, 'read the index');
    const marker = listed.some((object) => object.key === keys.indexPresent);
    this.present = marker;
    if (!marker) return { status: 'missing' };
    const { current, older } = this.newestPerSession(listed);
    if (older.length > 0) {
      // Housekeeping only: a failure leaves them for the next listing to remove.
      await requests.deleteMany(older, 'remove older index entries').catch(() => undefined);
    }
    current.sort(
      (left, right) =>
        right.updatedAt - left.updatedAt ||
        (left.sessionId < right.sessionId ? -1 : left.sessionId > right.sessionId ? 1 : 0),
    );
    const start = options.cursor === null ? 0 : startAfterCursor(current, options.cursor);
    const page = current.slice(start, start + options.limit);
    const bodies = await inBatches(page, READS_AT_ONCE, (entry) =>
      requests.get(entry.key, 'read the index'),
    );
    const entries: unknown[] = [];
    for (const [index, read] of bodies.entries()) {
      // Removed since the LIST (a delete, another listing's housekeeping): not shown.
      if (read === null) continue;
      try {
        entries.push(JSON.parse(read.body));
      } catch {
        return { status: 'corrupt', reason: `index entry ${page[index]!.key} is not JSON` };
      }
    }
    const last = page.at(-1);
    const more = start + options.limit < current.length && last !== undefined;
    return {
      status: 'ok',
      entries,
      nextCursor: more ? `${last.updatedAt}:${last.sessionId}` : null,
    };
  }

  private newestPerSession(listed: readonly ListedObject[]): {
    current: Entry[];
    older: string[];
  } {
    const newest = new Map<string, Entry>();
    const older: string[] = [];
    for (const object of listed) {
      const parsed = this.context.keys.parseIndexEntry(object.key);
      if (parsed === null) continue;
      const entry: Entry = { ...parsed, key: object.key, lastModified: object.lastModified };
      const known = newest.get(entry.sessionId);
      if (known === undefined) {
        newest.set(entry.sessionId, entry);
        continue;
      }
      const newer =
        entry.lastModified > known.lastModified ||
        (entry.lastModified === known.lastModified && entry.updatedAt > known.updatedAt);
      older.push(newer ? known.key : entry.key);
      if (newer) newest.set(entry.sessionId, entry);
    }
    return { current: [...newest.values()], older };
  }

  private async exists(): Promise<boolean> {
    if (this.present === true) return true;
    const found =
      (await this.context.requests.head(this.context.keys.indexPresent, 'read the index')) !== null;
    this.present = found;
    return found;
  }

  private async markPresent(): Promise<void> {
    await this.context.requests.put(this.context.keys.indexPresent, '', {}, 'write the index');
    this.present = true;
  }
}

/** The position after the cursor `<updatedAt>:<id>` in the sorted entries. */
function startAfterCursor(sorted: readonly Entry[], cursor: string): number {
  const separator = cursor.indexOf(':');
  const updatedAt = Number(cursor.slice(0, separator));
  const id = cursor.slice(separator + 1);
  const index = sorted.findIndex(
    (entry) =>
      entry.updatedAt < updatedAt || (entry.updatedAt === updatedAt && entry.sessionId > id),
  );
  return index < 0 ? sorted.length : index;
}
