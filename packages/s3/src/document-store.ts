import {
  BackendError,
  BackendUnavailableError,
  type Collection,
  type DeleteOptions,
  type DocumentWrite,
  type IdPage,
  type ListDocumentsOptions,
  type PutResult,
  type SessionSummary,
  type StoredDocument,
  type WriteOptions,
  WriteOutcomeUnknownError,
} from '@keepsake/core';
import { backoffDelay, sleep } from './backoff.js';
import { ADAPTER_NAME, classify, toKeepsakeError } from './errors.js';
import { EtagCache } from './etag-cache.js';
import { withinClockAllowance } from './listing-bounds.js';
import type { ObjectInfo, PutConditions } from './requests.js';
import { KeyedQueue, type StorageContext } from './storage-context.js';
import {
  type CarriedMetadata,
  carriedMetadataOf,
  encodeSummary,
  SUMMARY_METADATA,
  SUMMARY_PARTIAL_METADATA,
  summaryMetadata,
} from './summary-metadata.js';
import { REVISION_METADATA, revisionOf, WRITE_METADATA } from './write-tokens.js';

/**
 * B7: what a session write does to the summary its document carries. `set`: this save's
 * summary (an indexed save; a shortened one when too long for metadata, its whole entry then
 * written separately); `keep`: the previous version's, carried over (`skipIndex`, so the
 * listing still shows the last indexed save); `none`: no summary (not a session).
 */
type SummaryPlan =
  | { readonly kind: 'set'; readonly carried: CarriedMetadata; readonly updatedAt: number }
  | { readonly kind: 'keep' }
  | { readonly kind: 'none' };

/** Writes an index entry for the document version `etag` (the adapter's IndexStore). */
export type WriteIndexEntry = (summary: SessionSummary, etag: string | null) => Promise<void>;

/** What a write learned beyond its result. */
interface WriteNote {
  /**
   * B7: the save's index entry must be written now, not left for a listing to make: the
   * summary may be more than CLOCK_ALLOWANCE_MS ahead of the document's LastModified.
   */
  entryNeeded: boolean;
}

/** Conditional PUTs that may meet a stale ETag of the very revision expected, in a row. */
const STALE_ETAG_REFRESHES = 2;

/**
 * Documents (sessions, retained revisions, lifecycle state): one object each, its bytes
 * exactly the text core wrote, its revision in user metadata.
 *
 * B4: a create is `PUT If-None-Match: *`; an update is `PUT If-Match: <ETag of the expected
 * revision>`, one request when the ETag is known from this adapter's last read or write.
 * 412 means another writer got there first: a HEAD then gives the current revision for the
 * conflict. B1: a PUT is atomic on S3, so a reader sees the old or the new object.
 *
 * B2, B4 under failures: an attempt whose reply was lost (timeout, reset, 5xx, 409
 * ConditionalRequestConflict) is followed, after a backoff, by a HEAD: the object carries
 * the write token of the PUT that made it, so a write that landed is recognised as this
 * one's and never reported as another writer's conflict; one that did not land is sent
 * again with the same condition. When every attempt failed, the write rejects with
 * `WriteOutcomeUnknownError` and core settles it before the session's next write.
 *
 * B7, one request per indexed save: a session's summary rides in the document's metadata
 * (`SUMMARY_METADATA`), so the index entry lands with the document or not at all; the
 * listing turns it into an index entry later (see IndexStore). A save with `skipIndex`
 * carries the previous version's summary over, from the ETag cache or the HEAD it makes.
 */
export class DocumentStore {
  private readonly etags = new EtagCache();
  private readonly queue = new KeyedQueue();

  private readonly context: StorageContext;
  private readonly writeIndexEntry: WriteIndexEntry;

  constructor(context: StorageContext, writeIndexEntry: WriteIndexEntry) {
    this.context = context;
    this.writeIndexEntry = writeIndexEntry;
  }

  /** The ETag (key form) of the session document version this adapter last read or wrote. */
  knownEtag(id: string): string | null {
    return this.etags.get(this.context.keys.document('sessions', id))?.etag ?? null;
  }

  async get(collection: Collection, id: string): Promise<StoredDocument | null> {
    const key = this.context.keys.document(collection, id);
    const read = await this.context.requests.get(key, 'read a document');
    if (read === null) {
      this.etags.forget(key);
      return null;
    }
    this.rememberStored(key, read);
    return { revision: revisionOf(read.metadata), base: read.body, deltas: [] };
  }

  async has(collection: Collection, id: string): Promise<boolean> {
    const key = this.context.keys.document(collection, id);
    return (await this.context.requests.head(key, 'check a document')) !== null;
  }

  put(
    collection: Collection,
    id: string,
    write: DocumentWrite,
    options: WriteOptions,
  ): Promise<PutResult> {
    if (write.kind !== 'full') {
      throw new BackendError(
        ADAPTER_NAME,
        'write a delta (the s3 adapter does not declare appendDeltas: every save is a full PUT)',
      );
    }
    const key = this.context.keys.document(collection, id);
    const summary = collection === 'sessions' ? options.indexEntry : undefined;
    const carried = summary === undefined ? null : encodeSummary(summary);
    const plan: SummaryPlan =
      carried !== null && summary !== undefined
        ? { kind: 'set', carried, updatedAt: summary.updatedAt }
        : collection === 'sessions'
          ? { kind: 'keep' }
          : { kind: 'none' };
    const note: WriteNote = { entryNeeded: false };
    const written = this.context.checksConditionsItself()
      ? this.queue.run(key, () =>
          this.write(key, write, options.expectedRevision, plan, true, note),
        )
      : this.write(key, write, options.expectedRevision, plan, false, note);
    if (summary === undefined) return written;
    return written.then((result) =>
      carried?.partial === true || note.entryNeeded
        ? this.withSeparateEntry(key, summary, result)
        : result,
    );
  }

  /**
   * B7: a summary too long for metadata, or one a listing could not bound by the document's
   * LastModified (see listing-bounds.ts), is written whole as its own entry once the
   * document has landed; its failure is the save's `indexFailure` (the document is stored).
   */
  private async withSeparateEntry(
    key: string,
    summary: SessionSummary,
    result: PutResult,
  ): Promise<PutResult> {
    if (!result.ok) return result;
    try {
      await this.writeIndexEntry(summary, this.etags.get(key)?.etag ?? null);
      return result;
    } catch (error) {
      return { ok: true, indexFailure: error instanceof Error ? error : new Error(String(error)) };
    }
  }

  private async write(
    key: string,
    write: DocumentWrite,
    expected: number | null,
    plan: SummaryPlan,
    checkFirst: boolean,
    note: WriteNote,
  ): Promise<PutResult> {
    const { requests } = this.context;
    const token = this.context.nextWriteToken();
    const metadata: Record<string, string> = {
      [REVISION_METADATA]: String(write.revision),
      [WRITE_METADATA]: token,
    };
    const operation = 'write a document';
    let conditions: PutConditions;
    // The summary the version replaced carries (plan `keep`), known with its ETag.
    let previousSummary: CarriedMetadata | undefined;
    const cached = this.etags.get(key);
    if (expected === null) conditions = { ifNoneMatch: true };
    else if (cached?.revision === expected && !checkFirst) {
      conditions = { ifMatch: cached.etag };
      previousSummary = cached.summary;
    } else {
      const found = await this.current(key, expected);
      if ('conflict' in found) return found.conflict;
      conditions = { ifMatch: found.etag };
      previousSummary = found.summary;
    }
    let written: CarriedMetadata | undefined;
    const setSummary = (previous: CarriedMetadata | undefined) => {
      written = plan.kind === 'set' ? plan.carried : plan.kind === 'keep' ? previous : undefined;
      delete metadata[SUMMARY_METADATA];
      delete metadata[SUMMARY_PARTIAL_METADATA];
      Object.assign(metadata, summaryMetadata(written));
    };
    setSummary(previousSummary);
    if (checkFirst && expected === null) {
      const existing = await requests.head(key, 'check a document');
      if (existing !== null) return this.conflictWith(key, existing);
    }
    let refreshes = 0;
    for (let attempt = 0; ; ) {
      let outcome: Awaited<ReturnType<typeof requests.putOnce>>;
      try {
        outcome = await requests.putOnce(key, write.text, metadata, conditions);
      } catch (error) {
        const failure = classify(error);
        if (failure.kind !== 'transient') throw toKeepsakeError(error, operation);
        attempt++;
        if (attempt >= requests.retry.attempts) {
          throw failure.sent
            ? new WriteOutcomeUnknownError(ADAPTER_NAME, operation, { cause: error })
            : new BackendUnavailableError(ADAPTER_NAME, `${operation}: not sent`, { cause: error });
        }
        await sleep(backoffDelay(requests.retry, attempt - 1));
        if (failure.sent && (await this.landed(key, token))) {
          // The reply, and its server time, lost: the entry is written too.
          note.entryNeeded = plan.kind === 'set';
          return { ok: true };
        }
        continue;
      }
      if (outcome.ok) {
        note.entryNeeded =
          plan.kind === 'set' && !withinClockAllowance(plan.updatedAt, outcome.serverTimeAtSend);
        this.etags.remember(key, {
          revision: write.revision,
          etag: outcome.etag,
          summary: written,
        });
        return { ok: true };
      }
      // 412: another writer, or an earlier attempt of this very write that landed.
      const stored = await this.headForWrite(key);
      if (stored !== null && stored.metadata[WRITE_METADATA] === token) {
        this.rememberStored(key, stored);
        note.entryNeeded = plan.kind === 'set';
        return { ok: true };
      }
      if (stored === null && expected === null && attempt + 1 < requests.retry.attempts) {
        // Created and deleted again between the PUT and the HEAD: try the create again.
        attempt++;
        continue;
      }
      if (stored !== null && expected !== null && revisionOf(stored.metadata) === expected) {
        // The revision expected is stored, under another ETag than the one remembered (the
        // same revision written again after a delete, or out of band): retry against it.
        if (refreshes < STALE_ETAG_REFRESHES) {
          refreshes++;
          conditions = { ifMatch: stored.etag };
          setSummary(carriedMetadataOf(stored.metadata));
          continue;
        }
      }
      return stored === null ? this.conflictWithNothing(key) : this.conflictWith(key, stored);
    }
  }

  /** The ETag of the expected revision, or the conflict when another revision is stored. */
  private async current(
    key: string,
    expected: number,
  ): Promise<{ etag: string; summary: CarriedMetadata | undefined } | { conflict: PutResult }> {
    const stored = await this.context.requests.head(key, 'check a document');
    if (stored === null) return { conflict: this.conflictWithNothing(key) };
    const revision = this.rememberStored(key, stored);
    if (revision !== expected) return { conflict: { ok: false, currentRevision: revision } };
    return { etag: stored.etag, summary: carriedMetadataOf(stored.metadata) };
  }

  /** After an attempt whose reply was lost: whether the object now is this write's. */
  private async landed(key: string, token: string): Promise<boolean> {
    const stored = await this.headForWrite(key);
    if (stored === null || stored.metadata[WRITE_METADATA] !== token) return false;
    this.rememberStored(key, stored);
    return true;
  }

  /** Remembers what a HEAD or GET found (revision, ETag, summary); returns the revision. */
  private rememberStored(key: string, stored: ObjectInfo): number {
    const revision = revisionOf(stored.metadata);
    this.etags.remember(key, {
      revision,
      etag: stored.etag,
      summary: carriedMetadataOf(stored.metadata),
    });
    return revision;
  }

  /** A HEAD whose failure leaves the write's outcome unknown. */
  private async headForWrite(key: string): Promise<ObjectInfo | null> {
    try {
      return await this.context.requests.head(key, 'check whether a write landed');
    } catch (error) {
      throw new WriteOutcomeUnknownError(ADAPTER_NAME, 'write a document', { cause: error });
    }
  }

  private conflictWith(key: string, stored: ObjectInfo): PutResult {
    return { ok: false, currentRevision: this.rememberStored(key, stored) };
  }

  private conflictWithNothing(key: string): PutResult {
    this.etags.forget(key);
    return { ok: false, currentRevision: null };
  }

  /**
   * Deletes a document. With `expectedRevision`, a HEAD checks the revision first; the
   * delete itself is not conditional (Ceph RGW ignores `If-Match` on DELETE, and core never
   * relies on a conditional delete).
   */
  async delete(collection: Collection, id: string, options: DeleteOptions): Promise<PutResult> {
    const key = this.context.keys.document(collection, id);
    if (options.expectedRevision !== undefined) {
      const stored = await this.context.requests.head(key, 'check a document');
      const revision = stored === null ? null : revisionOf(stored.metadata);
      if (revision !== options.expectedRevision) return { ok: false, currentRevision: revision };
    }
    await this.context.requests.delete(key, 'delete a document');
    this.etags.forget(key);
    return { ok: true };
  }

  /**
   * Ids in key order (S3 lists in UTF-8 byte order: for these ids, string order). Listed
   * with the delimiter `/`: a nested prefix below `doc/<collection>/` (H1) comes back as a
   * common prefix, and only keys of an id's shape are taken as documents.
   */
  async list(collection: Collection, options: ListDocumentsOptions): Promise<IdPage> {
    const { keys, requests } = this.context;
    const base = keys.documentPrefix(collection);
    const ids: string[] = [];
    const startAfter = options.cursor === null ? undefined : `${base}${options.cursor}`;
    let token: string | null = null;
    do {
      const page: Awaited<ReturnType<typeof requests.list>> = await requests.list(
        `${base}${options.prefix ?? ''}`,
        {
          maxKeys: Math.min(1000, options.limit - ids.length),
          delimiter: '/',
          token,
          ...(token === null && startAfter !== undefined ? { startAfter } : {}),
        },
        'list documents',
      );
      for (const object of page.objects) {
        const id = keys.documentId(collection, object.key);
        if (id !== null) ids.push(id);
      }
      token = page.nextToken;
    } while (token !== null && ids.length < options.limit);
    return { ids, nextCursor: token !== null && ids.length > 0 ? ids.at(-1)! : null };
  }
}
