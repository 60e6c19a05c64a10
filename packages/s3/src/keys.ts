import {
  assertCollection,
  assertDocumentId,
  COLLECTIONS,
  type Collection,
  isValidDocumentId,
} from '@keepsake/core';

/** Width of the zero-padded numbers in keys, so that S3's lexicographic order is numeric. */
const SEQUENCE_WIDTH = 16;
const TIME_WIDTH = 15;
const COLLECTION_NAMES: ReadonlySet<string> = new Set(COLLECTIONS);
/** `<runId>/<firstSequence>` under a session's journal folder. */
const SEGMENT_UNDER_SESSION = /^([A-Za-z0-9_-]{1,128})\/(\d{16})$/;
/** `<collection>/<id>/<time>-<nonce>` under the quarantine folder. */
const QUARANTINED = /^([a-z-]{1,32})\/([A-Za-z0-9_.-]{1,160})\/\d{15}-[0-9a-f]{1,32}$/;

/**
 * Every object key of one namespace (one prefix). Document ids are checked against their
 * collection's shape (core's `assertDocumentId`: `[A-Za-z0-9_-]`, `<sessionId>.<revision>`
 * in `revisions`, dotted segments in `checkpoints` and `checkpoint-writes`), then used as
 * they are: S3 keys are case-sensitive, and none of these characters needs escaping. Each
 * collection (core's `COLLECTIONS`) has its own folder, so one id in two collections is two
 * objects.
 *
 * ```
 * <prefix>/doc/<collection>/<id>                       a document (one object, conditional PUT)
 * <prefix>/journal/<sessionId>/<runId>/<firstSequence> a segment of a run's journal
 * <prefix>/index/<sessionId>/<updatedAt>.<etag>        a session's index entry (its summary) for
 *                                                      the document whose ETag is <etag>
 * <prefix>/index/<sessionId>/<updatedAt>               an entry for a document version not known
 * <prefix>/index/.present                              the index exists (B7: missing vs empty)
 * <prefix>/quarantine/<collection>/<id>/<time>-<nonce> a quarantined document's bytes
 * <prefix>/probe/scratch-<nonce>                       the capability probe's scratch object
 * ```
 *
 * H1, B8: a prefix is a namespace, and a nested prefix (`<prefix>/journal`,
 * `<prefix>/index/<id>`…) is another one, whose keys all sit below some folder of this
 * layout. So nothing here works on a key range as such: every key listed is parsed back
 * to its exact shape and depth above (`documentId`, `parseSegmentKey`, `parseIndexEntry`,
 * `parseQuarantined`, `segmentFirstSequence`), and only keys that parse are read, counted
 * or deleted. Without that check a delete of the session `doc` removed the range
 * `<prefix>/journal/doc/…`, which holds every document of a store on `<prefix>/journal`
 * (issue 35). Listings of documents use the delimiter `/`, so a nested prefix below
 * `doc/<collection>/` costs one common prefix, not a walk through its keys. The layout
 * itself is unchanged: data written by earlier versions parses as it always did.
 */
export class KeyLayout {
  readonly root: string;

  constructor(prefix: string) {
    this.root = `${prefix}/`;
  }

  document(collection: Collection, id: string): string {
    return `${this.documentPrefix(collection)}${assertDocumentId(collection, id)}`;
  }

  documentPrefix(collection: Collection): string {
    return `${this.root}doc/${assertCollection(collection)}/`;
  }

  /**
   * The id of a document key listed under `documentPrefix(collection)`; null for any other
   * key (a key of a nested prefix, a stray object), which is never taken for a document.
   */
  documentId(collection: Collection, key: string): string | null {
    const base = this.documentPrefix(collection);
    if (!key.startsWith(base)) return null;
    const id = key.slice(base.length);
    return isValidDocumentId(collection, id) ? id : null;
  }

  sessionJournals(sessionId: string): string {
    return `${this.root}journal/${sessionId}/`;
  }

  journal(sessionId: string, runId: string): string {
    return `${this.sessionJournals(sessionId)}${runId}/`;
  }

  segment(sessionId: string, runId: string, firstSequence: number): string {
    return `${this.journal(sessionId, runId)}${pad(firstSequence, SEQUENCE_WIDTH)}`;
  }

  /** The first sequence of a segment key, or null for a key that is not one. */
  segmentFirstSequence(journalPrefix: string, key: string): number | null {
    if (!key.startsWith(journalPrefix)) return null;
    const rest = key.slice(journalPrefix.length);
    if (!/^\d{16}$/.test(rest)) return null;
    return Number(rest);
  }

  /**
   * The run and first sequence of a segment key listed under `sessionJournals(sessionId)`,
   * or null for a key of another shape or depth (a nested prefix's key, a stray object).
   */
  parseSegmentKey(sessionId: string, key: string): { runId: string; firstSequence: number } | null {
    const base = this.sessionJournals(sessionId);
    if (!key.startsWith(base)) return null;
    const match = SEGMENT_UNDER_SESSION.exec(key.slice(base.length));
    if (match === null) return null;
    return { runId: match[1]!, firstSequence: Number(match[2]) };
  }

  /** StartAfter for a listing of the segments whose first sequence is above `sequence`. */
  segmentsAfter(sessionId: string, runId: string, sequence: number): string {
    return this.segment(sessionId, runId, sequence);
  }

  get indexEntries(): string {
    return `${this.root}index/`;
  }

  indexEntriesOf(sessionId: string): string {
    return `${this.indexEntries}${sessionId}/`;
  }

  /**
   * `etag` (see `etagKeyPart`) names the document version the entry summarizes; null when
   * the writer does not know it (a rebuild, a repair of a version this process did not
   * write), so the next listing checks the document.
   */
  indexEntry(sessionId: string, updatedAt: number, etag: string | null): string {
    const version = etag === null ? '' : `.${etag}`;
    return `${this.indexEntriesOf(sessionId)}${pad(updatedAt, TIME_WIDTH)}${version}`;
  }

  /** The parts of an index entry key, or null for a key that is not one. */
  parseIndexEntry(
    key: string,
  ): { sessionId: string; updatedAt: number; etag: string | null } | null {
    if (!key.startsWith(this.indexEntries)) return null;
    const match = /^([A-Za-z0-9_-]{1,128})\/(\d{15})(?:\.([A-Za-z0-9_-]{1,64}))?$/.exec(
      key.slice(this.indexEntries.length),
    );
    if (match === null) return null;
    return { sessionId: match[1]!, updatedAt: Number(match[2]), etag: match[3] ?? null };
  }

  /** Listed with the entries (ids hold no "."), so one LIST says whether the index exists. */
  get indexPresent(): string {
    return `${this.indexEntries}.present`;
  }

  get quarantine(): string {
    return `${this.root}quarantine/`;
  }

  quarantined(collection: Collection, id: string, nonce: string): string {
    return `${this.quarantine}${collection}/${assertDocumentId(collection, id)}/${nonce}`;
  }

  /**
   * The collection and id of a quarantined copy's key, or null for a key of another shape
   * or depth (a nested prefix's key below `quarantine/`).
   */
  parseQuarantined(key: string): { collection: Collection; id: string } | null {
    if (!key.startsWith(this.quarantine)) return null;
    const match = QUARANTINED.exec(key.slice(this.quarantine.length));
    if (match === null || !COLLECTION_NAMES.has(match[1]!)) return null;
    const collection = match[1] as Collection;
    const id = match[2]!;
    return isValidDocumentId(collection, id) ? { collection, id } : null;
  }

  /**
   * `scratch-` keeps the name from ever being all digits: a nested prefix's probe object
   * (`<prefix>/journal/<id>/probe/…`) is then never a segment, an index entry or a
   * quarantined copy in the shape of the prefix around it.
   */
  probe(nonce: string): string {
    return `${this.root}probe/scratch-${nonce}`;
  }
}

function pad(value: number, width: number): string {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new RangeError(`a key number must be a non-negative safe integer, not ${value}`);
  }
  return String(value).padStart(width, '0');
}
