import type { IndexPage, SessionSummary } from '@keepsake/core';
import { inBatches } from './in-batches.js';
import {
  type ListedEntry,
  newestFirst,
  resolveEntries,
  type UncheckedSession,
} from './index-resolution.js';
import type { StorageContext } from './storage-context.js';
import { carriedSummary, etagKeyPart } from './summary-metadata.js';

/** Requests (GETs, PUTs) a listing or a rebuild makes at once. */
const READS_AT_ONCE = 16;

/**
 * Changed documents a listing checks at once (a HEAD, then the PUT of the entry learned):
 * one round, after which the listing decides whether the page is settled.
 */
const CHECKS_AT_ONCE = 32;

/** A session on the listing: its entry, and its summary text when the listing already has it. */
interface Listed {
  readonly entry: ListedEntry;
  readonly text?: string;
}

/**
 * B7: the session index. A session document carries the summary of its last indexed save
 * in its metadata (see DocumentStore), so an indexed save is one PUT; the index proper is
 * a cache of those summaries, one small object per entry,
 * `index/<sessionId>/<updatedAt>.<etag>`, naming the document version it summarizes, plus
 * `index/.present` saying the index exists (a missing index is reported, never restarted
 * by a put).
 *
 * A listing LISTs every key under `index/`, then every session document (S3 LIST is
 * strongly consistent, and lists each object's ETag). A document whose ETag names one of
 * its entries is listed from that entry. Any other document changed since the last
 * listing: one HEAD reads the summary it carries, which the listing writes as the entry of
 * that version (one PUT, so the next listing does not ask again). A document that carries
 * none (created with `skipIndex`, a summary too long for metadata, written before this
 * layout) keeps its newest entry, copied under its new version; with no entry at all it is
 * not listed (B7: never indexed). Entries superseded are removed in one DeleteObjects; an
 * entry whose document is not listed is passed on, and core, finding the document gone,
 * removes it (B7). The page is the first `limit` by updatedAt descending then id (after
 * the cursor), and the summaries not already read are GET.
 *
 * The changed documents are checked newest LastModified first, CHECKS_AT_ONCE at a time,
 * and only until the page is settled: a summary is never more than CLOCK_ALLOWANCE_MS ahead
 * of its document's LastModified (a writer that cannot show it writes its entry itself, see
 * listing-bounds.ts), so once the page is full and every document left was modified more
 * than that allowance before the page's last updatedAt, none of them belongs on the page.
 * They are left for a later page or listing to check.
 *
 * So a page of `limit` entries costs ⌈index keys/1000⌉ + ⌈sessions/1000⌉ LISTs, a HEAD and
 * a PUT per session saved since the last listing and no more than CLOCK_ALLOWANCE_MS before
 * the page's last entry (all of them while the page is not full), and up to `limit` GETs
 * (+1 DeleteObjects when entries were superseded); core adds one HEAD per entry (B7's check
 * that the document exists).
 */
export class IndexStore {
  /** Whether the index exists, as this adapter last saw; null until `start()`. */
  private present: boolean | null = null;

  private readonly context: StorageContext;
  /** The ETag of the session document version this adapter last read or wrote, if known. */
  private readonly knownEtag: (sessionId: string) => string | null;

  constructor(context: StorageContext, knownEtag: (sessionId: string) => string | null) {
    this.context = context;
    this.knownEtag = knownEtag;
  }

  /** At open: a namespace without sessions starts with an empty index (nothing to rebuild). */
  async start(): Promise<void> {
    const { requests, keys } = this.context;
    if ((await requests.head(keys.indexPresent, 'read the index')) !== null) {
      this.present = true;
      return;
    }
    if (!(await this.anySession())) {
      await this.markPresent();
      return;
    }
    this.present = false;
  }

  /**
   * Whether a session document exists: the first page of the sessions folder (delimiter
   * `/`, so a nested prefix's keys below it are one common prefix each), further pages only
   * while no key of a session's shape was seen (H1: a nested prefix alone is no session).
   */
  private async anySession(): Promise<boolean> {
    const { requests, keys } = this.context;
    let token: string | null = null;
    do {
      const page: Awaited<ReturnType<typeof requests.list>> = await requests.list(
        keys.documentPrefix('sessions'),
        { maxKeys: 100, delimiter: '/', token },
        'list documents',
      );
      if (page.objects.some((object) => keys.documentId('sessions', object.key) !== null)) {
        return true;
      }
      token = page.nextToken;
    } while (token !== null);
    return false;
  }

  /**
   * B7: an entry written by core (a repair after a failed index write), for the version this
   * adapter last wrote when it knows it. An index found missing stays missing (the entry is
   * dropped) until core rebuilds it.
   */
  async put(summary: SessionSummary): Promise<void> {
    await this.putFor(summary, this.knownEtag(summary.id));
  }

  /** Writes the entry of the document version `etag` (as S3 returned it; null: unknown). */
  async putFor(summary: SessionSummary, etag: string | null): Promise<void> {
    if (!(await this.exists())) return;
    await this.writeEntry(summary.id, summary.updatedAt, etag, JSON.stringify(summary));
  }

  private async writeEntry(
    sessionId: string,
    updatedAt: number,
    etag: string | null,
    text: string,
  ): Promise<string> {
    const key = this.context.keys.indexEntry(
      sessionId,
      updatedAt,
      etag === null ? null : etagKeyPart(etag),
    );
    await this.context.requests.put(key, text, {}, 'write the index');
    return key;
  }

  /**
   * Removes every entry of the session: one LIST and one DeleteObjects. Only keys that
   * parse as its entries: a nested prefix `<prefix>/index/<sessionId>` lives in the same
   * range (H1, issue 35).
   */
  async delete(sessionId: string): Promise<void> {
    const entries = await this.entriesOf(sessionId, 'write the index');
    await this.context.requests.deleteMany(
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
    // Entries only: a nested prefix `<prefix>/index/…` lives under the same folder (H1).
    await requests.deleteMany(
      old.flatMap((object) => (keys.parseIndexEntry(object.key) === null ? [] : [object.key])),
      'rebuild the index',
    );
    // Versions unknown: the next listing checks each document once (a HEAD each).
    await inBatches(summaries, READS_AT_ONCE, (summary) =>
      requests.put(
        keys.indexEntry(summary.id, summary.updatedAt, null),
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
    const documents = await requests.listAll(keys.documentPrefix('sessions'), 'read the index', {
      delimiter: '/',
    });
    const { current, unchecked, obsolete } = resolveEntries(keys, listed, documents);
    const after = options.cursor === null ? null : parseCursor(options.cursor);
    const page = new PageSelection(after, options.limit);
    for (const entry of current) page.offer({ entry });
    // Newest LastModified first, in rounds, until no document left can carry a summary that
    // belongs on the page (listing-bounds.ts): those left come after it, and are checked by
    // the listing of a later page, or of the next listing's.
    const remaining = [...unchecked].sort((left, right) => right.bound - left.bound);
    let next = 0;
    while (next < remaining.length) {
      const last = page.last();
      if (last !== null && remaining[next]!.bound < last.updatedAt) break;
      const round = remaining.slice(next, next + CHECKS_AT_ONCE);
      next += round.length;
      const checked = await inBatches(round, CHECKS_AT_ONCE, (session) =>
        this.check(session, obsolete),
      );
      for (const session of checked) if (session !== null) page.offer(session);
    }
    if (obsolete.length > 0) {
      // Housekeeping only: a failure leaves them for the next listing to remove.
      await requests.deleteMany(obsolete, 'remove older index entries').catch(() => undefined);
    }
    const chosen = page.chosen();
    const more = page.beyond() || next < remaining.length;
    const texts = await inBatches(chosen, READS_AT_ONCE, (session) => this.textOf(session));
    const entries: unknown[] = [];
    for (const [index, text] of texts.entries()) {
      // Deleted since the listings: not shown.
      if (text === null) continue;
      try {
        entries.push(JSON.parse(text));
      } catch {
        return { status: 'corrupt', reason: `index entry ${chosen[index]!.entry.key} is not JSON` };
      }
    }
    const last = chosen.at(-1)?.entry;
    return {
      status: 'ok',
      entries,
      nextCursor: more && last !== undefined ? `${last.updatedAt}:${last.sessionId}` : null,
    };
  }

  /**
   * A session whose document changed since its entry was written: the summary its
   * document carries, else its newest entry, written as the entry of the version the HEAD
   * saw. Its older entries go to `obsolete`; null when it is not to be listed.
   */
  private async check(session: UncheckedSession, obsolete: string[]): Promise<Listed | null> {
    const { requests, keys } = this.context;
    const { sessionId, entries } = session;
    const stored = await requests.head(keys.document('sessions', sessionId), 'read the index');
    if (stored === null) {
      // Deleted since the document listing.
      for (const entry of entries) obsolete.push(entry.key);
      return null;
    }
    const carried = carriedSummary(stored.metadata);
    let text: string;
    let updatedAt: number;
    let kept: ListedEntry | undefined;
    if (carried !== null && !carried.partial) {
      ({ text, updatedAt } = carried);
    } else {
      // None in metadata: the newest entry. A shortened one: the whole entry of that save.
      const found = await this.newestEntryText(sessionId, entries, carried?.updatedAt);
      if (found === null) {
        if (carried === null) return null;
        // The save writes its whole entry right after the document: until it lands, the
        // shortened title, this once, with nothing written or removed.
        const entry: ListedEntry = {
          sessionId,
          updatedAt: carried.updatedAt,
          etag: etagKeyPart(stored.etag),
          key: '',
          lastModified: stored.lastModified,
        };
        return { entry, text: carried.text };
      }
      ({ text } = found);
      kept = found.entry;
      updatedAt = kept.updatedAt;
    }
    const key = await this.writeEntry(sessionId, updatedAt, stored.etag, text).catch(() => null);
    for (const entry of entries) {
      // The entry carried over is removed only once its copy is written.
      if (entry.key !== key && (entry !== kept || key !== null)) obsolete.push(entry.key);
    }
    const entry: ListedEntry = {
      sessionId,
      updatedAt,
      etag: etagKeyPart(stored.etag),
      key: key ?? kept?.key ?? '',
      lastModified: stored.lastModified,
    };
    return { entry, text };
  }

  /**
   * The newest of the session's entries (of the save at `updatedAt`, when given) and its
   * text. One listed may have been removed by another listing meanwhile (superseded by a
   * newer one), or the one wanted written since the listing (a whole summary lands right
   * after its document): the session's entries are then listed again, once.
   */
  private async newestEntryText(
    sessionId: string,
    listed: readonly ListedEntry[],
    updatedAt?: number,
  ): Promise<{ entry: ListedEntry; text: string } | null> {
    let entries = listed;
    for (let round = 0; round < 2; round++) {
      const candidates =
        updatedAt === undefined
          ? entries
          : entries.filter((entry) => entry.updatedAt === updatedAt);
      const newest = newestFirst(candidates)[0];
      if (newest !== undefined) {
        const read = await this.context.requests.get(newest.key, 'read the index');
        if (read !== null) return { entry: newest, text: read.body };
      } else if (updatedAt === undefined) {
        return null;
      }
      entries = await this.entriesOf(sessionId, 'read the index');
    }
    return null;
  }

  /** The summary text of a listed session: read already, else its entry's body. */
  private async textOf(session: Listed): Promise<string | null> {
    if (session.text !== undefined) return session.text;
    const read = await this.context.requests.get(session.entry.key, 'read the index');
    if (read !== null) return read.body;
    // Removed by another listing since (superseded by a newer version's entry): ask again.
    const { sessionId } = session.entry;
    const entries = await this.entriesOf(sessionId, 'read the index');
    const checked = await this.check({ sessionId, entries, bound: Infinity }, []);
    return checked?.text ?? null;
  }

  /** The session's entries; keys of any other shape under its folder are left out (H1). */
  private async entriesOf(sessionId: string, operation: string): Promise<ListedEntry[]> {
    const { requests, keys } = this.context;
    const listed = await requests.listAll(keys.indexEntriesOf(sessionId), operation, {
      delimiter: '/',
    });
    return listed.flatMap((object) => {
      const parsed = keys.parseIndexEntry(object.key);
      return parsed === null || parsed.sessionId !== sessionId
        ? []
        : [{ ...parsed, key: object.key, lastModified: object.lastModified }];
    });
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

/** A cursor `<updatedAt>:<id>`: the position of the last entry of the previous page. */
interface Position {
  readonly updatedAt: number;
  readonly sessionId: string;
}

function parseCursor(cursor: string): Position {
  const separator = cursor.indexOf(':');
  return { updatedAt: Number(cursor.slice(0, separator)), sessionId: cursor.slice(separator + 1) };
}

/** B7's order: updatedAt descending, then id ascending. Negative when `left` comes first. */
function compareListed(left: Position, right: Position): number {
  return (
    right.updatedAt - left.updatedAt ||
    (left.sessionId < right.sessionId ? -1 : left.sessionId > right.sessionId ? 1 : 0)
  );
}

/**
 * The first `limit` sessions after the cursor among those offered, kept in order as they
 * come (an insertion into at most `limit`, so a listing of many rounds never sorts the
 * whole collection again), and whether any offered session came after them.
 */
class PageSelection {
  private readonly after: Position | null;
  private readonly limit: number;
  private readonly sessions: Listed[] = [];
  private dropped = false;

  constructor(after: Position | null, limit: number) {
    this.after = after;
    this.limit = limit;
  }

  offer(session: Listed): void {
    const { entry } = session;
    if (this.after !== null && compareListed(entry, this.after) <= 0) return;
    let low = 0;
    let high = this.sessions.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (compareListed(this.sessions[middle]!.entry, entry) <= 0) low = middle + 1;
      else high = middle;
    }
    if (low >= this.limit) {
      this.dropped = true;
      return;
    }
    this.sessions.splice(low, 0, session);
    if (this.sessions.length > this.limit) {
      this.sessions.pop();
      this.dropped = true;
    }
  }

  /** The page's last entry once the page is full, else null. */
  last(): ListedEntry | null {
    return this.sessions.length < this.limit ? null : this.sessions.at(-1)!.entry;
  }

  chosen(): readonly Listed[] {
    return this.sessions;
  }

  /** Whether a session offered comes after the page. */
  beyond(): boolean {
    return this.dropped;
  }
}
