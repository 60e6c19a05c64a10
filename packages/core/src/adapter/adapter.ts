/**
 * Folder adapter/: the storage adapter contract and what core keeps on its side of it (H1–H3).
 * adapter.ts is the contract (StorageAdapterV1, capabilities, H1), collections.ts its document
 * collections, memory-adapter.ts the in-memory reference every clause is first run against,
 * adapter-call.ts the guard that turns whatever an adapter throws into a typed error, listed-ids.ts
 * the re-check of what an adapter lists (B5, B8), and migrate.ts moves data between backends (H3).
 */

import type { SessionSummary } from '../validation/schemas.js';
import type { Collection } from './collections.js';
import type { AdapterLiveness } from './liveness.js';

/**
 * The storage adapter contract, version 1. Adapters implement these primitives and
 * nothing more; every clause of the durability contract (revisions, recovery, the run
 * journal's semantics, the memory lifecycle) is implemented once, in core, on top of them.
 *
 * Ids: a session or run id matches `^[A-Za-z0-9_-]{1,128}$`. Each document collection has
 * its own document id shape (see `COLLECTIONS`, collections.ts); core and `@keepsake/langgraph`
 * validate ids before they call, and every adapter checks them again with
 * `assertDocumentId` (an `InvalidIdError` for a bad id, A1) before an id becomes a path or a
 * key. Adapters must still encode them for their medium (case-insensitive filesystems, for
 * instance) so distinct ids never collide.
 *
 * Errors: an adapter throws `BackendUnavailableError` when the backend cannot be
 * reached and `BackendError` for any other failure (permission, I/O, timeout). It never
 * reports a failed write as done and never turns a read failure into "not found".
 */
export interface StorageAdapterV1 {
  readonly specificationVersion: 'v1';
  /** Short name used in error messages and reports: "memory", "fs", "redis", "s3". */
  readonly name: string;
  readonly capabilities: AdapterCapabilities;
  /**
   * Optional (F1, E9): whether a run's owner is alive, so a dead owner's run is repaired at
   * once rather than after the grace (see AdapterLiveness).
   */
  readonly liveness?: AdapterLiveness;

  /** Called once by the store before any other call (sweep stale temp files here, B2). */
  open(): Promise<void>;

  // ── Documents ────────────────────────────────────────────────────────────────────
  /** Returns the document or null when it does not exist. */
  getDocument(collection: Collection, id: string): Promise<StoredDocument | null>;
  /**
   * Whether the document exists, without reading it (a stat, EXISTS, HEAD). A document
   * that exists but cannot be parsed exists. Core asks this once per run, after its first
   * append, and from `exists()`: it must cost far less than `getDocument`.
   */
  hasDocument(collection: Collection, id: string): Promise<boolean>;
  /**
   * Writes a document if, and only if, its stored revision equals `expectedRevision`
   * (null: the document must not exist). Atomic: a reader sees the old or the new
   * document, never a mix (B1). With `durable`, resolves only once the write survives
   * power loss as far as the backend can promise (B3).
   */
  putDocument(
    collection: Collection,
    id: string,
    write: DocumentWrite,
    options: WriteOptions,
  ): Promise<PutResult>;
  /**
   * Deletes a document. With `expectedRevision`, only if the stored revision equals it;
   * otherwise nothing is deleted and `{ ok: false, currentRevision }` comes back (null when
   * there is no document). Deleting a document that does not exist, unconditionally,
   * resolves `{ ok: true }`. Pinned by "B4: adapter: deleteDocument with a stale
   * expectedRevision…" in the conformance suite.
   */
  deleteDocument(collection: Collection, id: string, options: DeleteOptions): Promise<PutResult>;
  /**
   * Lists document ids in a collection, in any stable order. With `prefix`, only ids that
   * start with it, on every page: core lists one session's retained revisions with the
   * prefix `<sessionId>.` and deletes what comes back (core re-checks the prefix too, but
   * an adapter that ignores it fails B5). Pinned by "B5: listDocuments with a prefix…".
   */
  listDocuments(collection: Collection, options: ListDocumentsOptions): Promise<IdPage>;
  /**
   * A2: moves a document's bytes aside, intact, so a fresh document may take its place;
   * returns where they went (a path, a key) for the error report. Afterwards the document
   * no longer exists in its collection. When there is no such document (another instance
   * quarantined or deleted it first), it moves nothing and still resolves with a location;
   * it does not throw. Pinned by "A2: adapter: quarantining a document that does not exist…".
   */
  quarantineDocument(collection: Collection, id: string, reason: string): Promise<string>;
  /** Lists what `quarantineDocument` moved aside. */
  listQuarantined(): Promise<QuarantinedDocument[]>;
  /**
   * Optional: the quarantined bytes at `location`, exactly as they were stored (base and
   * deltas joined by newlines), or null when nothing is there. Lets the conformance suite
   * check that quarantine keeps bytes intact on every adapter.
   */
  readQuarantined?(location: string): Promise<string | null>;

  // ── Session index (B7) ───────────────────────────────────────────────────────────
  /**
   * Adds or replaces one entry. When the index is missing (see `listIndex`), it must stay
   * missing: do not create an index holding only this entry, which would hide every other
   * session until the next rebuild; drop the entry (core rebuilds from the documents at
   * the next listing) and resolve.
   */
  putIndexEntry(summary: SessionSummary, options: { durable: boolean }): Promise<void>;
  /**
   * Removes one entry (nothing when absent; a missing index stays missing). After
   * `delete()` the index must hold no entry for the session: pinned by "B8: adapter: after
   * delete() the index holds no entry…".
   */
  deleteIndexEntry(id: string, options: { durable: boolean }): Promise<void>;
  /** Replaces the whole index (rebuild after it was found missing or corrupt). */
  replaceIndex(summaries: SessionSummary[], options: { durable: boolean }): Promise<void>;
  /**
   * Entries newest first (`updatedAt` descending, then `id` ascending), from an opaque
   * cursor. Entries are returned unparsed; core validates them. `missing` means no index
   * exists: it was never written on a backend that already holds sessions, or it was lost
   * or removed out of band (the conformance initializer's `removeIndex`). A backend with no
   * session documents may start an empty index in `open()` instead. Never report a missing
   * index as an empty `ok` page: the sessions would vanish from `list()` (B7, caught by
   * the conformance suite's rebuild test). `corrupt` means it exists but cannot be read;
   * core rebuilds in both cases, with `replaceIndex`.
   */
  listIndex(options: { cursor: string | null; limit: number }): Promise<IndexPage>;

  // ── Run journals (E2, E3) ────────────────────────────────────────────────────────
  /**
   * Appends records to the journal of one run. `records[0].sequence` must be exactly one
   * more than the last stored sequence (1 for a new journal), else nothing is written and
   * `{ ok: false, lastSequence }` comes back. Records are stored in order; the append is
   * all or nothing as far as readers can tell (a torn tail is ignored on read, E3).
   * Core never appends an empty batch; an adapter may refuse one with a typed error or
   * resolve `{ ok: true }`, but stores nothing either way. With `durability` other than
   * `none`, resolves only once the records are durable (`group` may share one flush among
   * concurrent appends, E2).
   */
  appendLog(
    sessionId: string,
    runId: string,
    records: LogRecordInput[],
    options: { durability: LogDurability },
  ): Promise<AppendLogResult>;
  /** Reads records with sequence > `afterSequence`, in order, at most `limit`. */
  readLog(
    sessionId: string,
    runId: string,
    options: { afterSequence: number; limit: number },
  ): Promise<LogReadResult>;
  /**
   * Optional (E9): calls `onAppend` soon after records were appended to this run's journal
   * by any instance sharing the backend (a file watch, a pub/sub message), so a follower on
   * another instance reads at once instead of at its next poll. Best effort: a call may be
   * spurious, several appends may make one call, and a missed one is caught by the
   * follower's poll, which stays (only rarer). Never calls `onAppend` synchronously from
   * inside `watchLog`, and never after the returned function was called, which stops it.
   * Returns null when it cannot push here (a network filesystem, a server without pub/sub):
   * the follower then polls as often as without it.
   */
  watchLog?(sessionId: string, runId: string, onAppend: () => void): (() => void) | null;
  /** Run ids that have a journal under this session. */
  listLogs(sessionId: string): Promise<string[]>;
  /** B8: removes every journal of the session. */
  deleteLogs(sessionId: string, options: { durable: boolean }): Promise<void>;
  /**
   * B8: removes the journal of one run (nothing when there is none). Core uses it for a
   * journal a run created after another instance deleted its session.
   */
  deleteLog(sessionId: string, runId: string, options: { durable: boolean }): Promise<void>;

  /**
   * C1: makes everything written so far durable (best effort for `process` durability),
   * including journal appends made with durability `none` and writes made with `durable:
   * false`. `flushAll()` and `close()` end with it. Where each durable write makes only
   * itself durable (a file per document: fs), the rewrites `flushAll()` makes of the cached
   * sessions leave everything else to `sync()`. Where each durable commit also makes every
   * earlier commit durable (one write-ahead log: SQLite in WAL mode, a Redis AOF), those
   * rewrites cover the earlier writes, and `sync()` matters only when no durable write
   * follows them: nothing cached, or a rewrite that failed. The conformance suite checks
   * both (C1, C2) when its initializer simulates a crash.
   */
  sync(): Promise<void>;
  /** Releases connections and handles. Idempotent. */
  close(): Promise<void>;
}

export type StorageAdapter = StorageAdapterV1;

/** The primitives every v1 adapter implements (`readQuarantined` is the optional one). */
export const REQUIRED_ADAPTER_PRIMITIVES = [
  'open',
  'getDocument',
  'hasDocument',
  'putDocument',
  'deleteDocument',
  'listDocuments',
  'quarantineDocument',
  'listQuarantined',
  'putIndexEntry',
  'deleteIndexEntry',
  'replaceIndex',
  'listIndex',
  'appendLog',
  'readLog',
  'listLogs',
  'deleteLogs',
  'deleteLog',
  'sync',
  'close',
] as const satisfies ReadonlyArray<keyof StorageAdapterV1>;

export { COLLECTIONS, type Collection } from './collections.js';
export type { AdapterLiveness, OwnerState } from './liveness.js';

/**
 * What a durable write means on this backend (B3):
 * - `process`: survives nothing beyond the process (the in-memory reference);
 * - `fsync`: on stable storage of this machine (file and directory fsynced);
 * - `server-fsync`: the server confirmed its append-only file was fsynced (Redis WAITAOF);
 * - `replicated`: acknowledged by the configured number of replicas;
 * - `acknowledged`: the service acknowledged the write (S3 PUT).
 */
export type DurabilityLevel = 'process' | 'fsync' | 'server-fsync' | 'replicated' | 'acknowledged';

export interface AdapterCapabilities {
  /** The durability level `durable: true` writes reach. */
  readonly durability: DurabilityLevel;
  /**
   * A3: the largest value this backend stores, in UTF-8 bytes: a document's base or delta
   * text, or a journal record's text. A longer one is refused with `LimitExceededError`
   * (limit `maxValueBytes`) and nothing is written; never cut short. Leave it out when the
   * backend stores whatever core's own limits allow (16 MiB documents by default); the
   * conformance suite stores values up to 16 MiB only where this is declared that large.
   */
  readonly maxValueBytes?: number;
  /** B4: conditional writes hold across processes and instances sharing the backend. */
  readonly conditionalWrites: boolean;
  /** Several processes may open the same backend at once (the store still fences runs). */
  readonly sharedAcrossProcesses: boolean;
  /**
   * `putDocument` accepts `{ kind: 'delta' }` writes that cost O(delta), so a save that only
   * appends messages does not rewrite the history.
   */
  readonly appendDeltas: boolean;
  /** `appendLog` costs O(records), not O(journal). */
  readonly nativeAppend: boolean;
  /** Concurrent durable appends share one flush (`group` durability). */
  readonly groupCommit: boolean;
  /** H2: all keys of one session share a hash tag (Redis Cluster). */
  readonly clusterSafeKeys: boolean;
  /** `putDocument` accepts `indexEntry` and updates the index with the document (B7). */
  readonly indexWithDocument?: boolean;
  /**
   * H1: clauses this adapter cannot honour, each with the reason. The conformance suite
   * reports them as declared gaps; a clause not listed here must pass.
   */
  readonly gaps: readonly CapabilityGap[];
}

export interface CapabilityGap {
  /** A clause id, e.g. "B3", or a single test's id, e.g. "C3:restart". */
  readonly clause: string;
  readonly reason: string;
}

/**
 * A document as stored: a base written in full, plus the deltas appended since, in order.
 * Adapters without `appendDeltas` always return `deltas: []`.
 */
export interface StoredDocument {
  readonly revision: number;
  /** JSON text of the last full write. */
  readonly base: string;
  /** JSON texts of the delta writes since the base, oldest first. */
  readonly deltas: readonly string[];
}

export type DocumentWrite =
  /** Replaces the document (and drops its deltas). */
  | { readonly kind: 'full'; readonly revision: number; readonly text: string }
  /** Appends one delta to an existing document (only with `appendDeltas`). */
  | { readonly kind: 'delta'; readonly revision: number; readonly text: string };

export interface WriteOptions {
  /** The revision the caller last saw; null means the document must not exist yet. */
  readonly expectedRevision: number | null;
  /**
   * B3: with true, resolve only once the write is durable. With false, do not wait for a
   * flush: the write may reach stable storage later, on the backend's own schedule (SQLite
   * in WAL mode with `synchronous=NORMAL`, an AOF fsynced every second) or at the next
   * `sync()`. A backend that cannot write without flushing may flush anyway; the point is
   * that non-durable saves never pay for a flush they did not ask for.
   */
  readonly durable: boolean;
  /**
   * B7, only for adapters that declare `indexWithDocument` (sessions collection): the
   * session's summary, to be written to the index if, and only if, the conditional write
   * succeeds, and as durable as the document by the time `putDocument` resolves. Core
   * then makes no separate `putIndexEntry` call, so an adapter can cover both with
   * concurrent flushes.
   */
  readonly indexEntry?: SessionSummary;
}

export interface DeleteOptions {
  /** When given, delete only if the stored revision matches. */
  readonly expectedRevision?: number;
  readonly durable: boolean;
}

export type PutResult =
  | {
      readonly ok: true;
      /**
       * B7, with `indexEntry` only: the document was written (durably when asked), but its
       * index entry was not. The adapter resolves rather than rejects, because the write
       * landed and reporting it as failed would be untrue (a retry of a create would then
       * meet its own document). Core reports the failure as a `warning` event and retries
       * the entry before the next listing (see `SessionPersistence`).
       */
      readonly indexFailure?: Error;
    }
  | { readonly ok: false; readonly currentRevision: number | null };

export interface ListDocumentsOptions {
  readonly prefix?: string;
  readonly cursor: string | null;
  readonly limit: number;
}

export interface IdPage {
  readonly ids: string[];
  readonly nextCursor: string | null;
}

export interface QuarantinedDocument {
  readonly collection: Collection;
  readonly id: string;
  readonly location: string;
  readonly reason: string;
  readonly quarantinedAt: number;
}

export type IndexPage =
  | { readonly status: 'ok'; readonly entries: unknown[]; readonly nextCursor: string | null }
  | { readonly status: 'missing' }
  | { readonly status: 'corrupt'; readonly reason: string };

/** `none`: no flush; `group`: durable, flushes may be shared; `each`: one flush per append. */
export type LogDurability = 'none' | 'group' | 'each';

export interface LogRecordInput {
  readonly sequence: number;
  /** JSON text of the record. */
  readonly text: string;
}

export type AppendLogResult =
  | { readonly ok: true }
  | { readonly ok: false; readonly lastSequence: number };

export interface LogReadResult {
  /** False when no journal exists for this run. */
  readonly exists: boolean;
  readonly records: readonly LogRecordInput[];
  /** E3: the journal ended in a torn record (ignored; the next append repairs it). */
  readonly tornTail: boolean;
}
