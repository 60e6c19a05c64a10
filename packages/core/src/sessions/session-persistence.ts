import type { PutResult, StorageAdapter } from '../adapter/adapter.js';
import { adapterCall, toKeepsakeError } from '../adapter/adapter-call.js';
import { LimitExceededError, ShrinkRefusedError } from '../errors/input-errors.js';
import { NotFoundError, RevisionConflictError } from '../errors/storage-errors.js';
import type { StoreLimits } from '../options/store-options.js';
import type { StoreEvent } from '../store-types.js';
import type { Clock } from '../time/clock.js';
import type { Session } from '../validation/schemas.js';
import { assertWritable, normalizeMessages } from '../validation/session-validation.js';
import {
  deepFreeze,
  encodeDelta,
  encodeFull,
  headOf,
  summaryOf,
} from './documents/document-codec.js';
import { headText } from './documents/head-text.js';
import { IndexRepairs } from './listing/index-repairs.js';
import { rememberTranscript } from './message-ids.js';
import { readRetainedRevision, retainStoredRevision } from './retained-revisions.js';
import type { CacheEntry } from './session-cache.js';
import { readSessionEntry } from './session-read.js';
import type { SaveOptions } from './session-types.js';
import { UnconfirmedWrites } from './unconfirmed-writes.js';

export interface PersistenceOptions {
  adapter: StorageAdapter;
  clock: Clock;
  limits: StoreLimits;
  compactAfter: number;
  compactRatio: number;
  emit(event: StoreEvent): void;
}

/**
 * The read and write paths of session documents: decode + validate + quarantine on read
 * (A2, A5), and on write the reserved-field check (A4), limits (A3), shrink guard and
 * retention (B5), delta-or-full choice, conditional put (B4) and index update (B7).
 * Callers hold the session's lock.
 */
export class SessionPersistence {
  /** B7: index entries to write again after a failure (see IndexRepairs). */
  readonly indexRepairs: IndexRepairs;

  /** B2, B4: writes that rejected but may have landed, settled before the next write. */
  private readonly unconfirmedWrites: UnconfirmedWrites;

  constructor(private readonly options: PersistenceOptions) {
    this.indexRepairs = new IndexRepairs(options.adapter, options.emit);
    this.unconfirmedWrites = new UnconfirmedWrites(options.adapter, options.clock);
  }

  /** Reads a session from storage into a fresh cache entry. */
  async read(id: string): Promise<CacheEntry> {
    const entry = await this.readOrNull(id);
    if (entry === null) throw new NotFoundError(id);
    return entry;
  }

  readOrNull(id: string): Promise<CacheEntry | null> {
    return readSessionEntry(this.options, id);
  }

  /** B5: reads a retained revision as a detached entry (never cached, never saved). */
  readRetained(retainedId: string, sessionId: string): Promise<CacheEntry> {
    const { adapter, clock } = this.options;
    return readRetainedRevision(adapter, clock, retainedId, sessionId);
  }

  /**
   * Writes the entry's session (B1–B7), or `candidate`, a caller's copy of it at the stored
   * revision, which becomes the entry's live session only once its write has landed. On
   * failure nothing in the entry changes (B4, B5, C4: a refused copy never replaces the
   * live instance, so later loads, flushes and repairs never see it).
   * `rewriteRevision` (C1, clean sessions only) re-persists the stored revision as it is,
   * so a flush never bumps a revision another instance holds.
   */
  async write(
    entry: CacheEntry,
    options: SaveOptions & { rewriteRevision?: boolean },
    candidate: Session = entry.session,
  ): Promise<Session> {
    const { adapter, clock, limits } = this.options;
    const session = candidate;
    // B2, B4: a write of this entry that rejected may have landed; find out before this one.
    if (this.unconfirmedWrites.has(entry)) await this.unconfirmedWrites.settle(entry);
    const now = clock.now();
    assertWritable(session);
    // The stored messages are a prefix of these (an append, or no change to the transcript).
    const prefixKept = normalizeMessages(session, entry.storedMessages, now, entry);
    const messages = session.messages;
    if (messages.length > limits.maxMessages) {
      throw new LimitExceededError(
        'maxMessages',
        limits.maxMessages,
        messages.length,
        `Session "${session.id}"`,
      );
    }
    const stored = entry.storedMessages;
    let shrink = false;
    if (!prefixKept) {
      const kept = new Set(messages.map((message) => message.id));
      const missing = stored
        .filter((message) => !kept.has(message.id))
        .map((message) => message.id);
      if (missing.length > 0 && options.allowShrink !== true) {
        throw new ShrinkRefusedError(session.id, missing);
      }
      shrink = missing.length > 0;
    }
    const rewrite = options.rewriteRevision === true && entry.storedRevision !== null;
    const revision = rewrite ? entry.storedRevision! : (entry.storedRevision ?? 0) + 1;
    const updatedAt = options.touchUpdatedAt === false || rewrite ? session.updatedAt : now;
    // Written in a delta and kept to tell a changed head later (isDirty): encoded once.
    const writtenHeadText = headText(session, revision, updatedAt);
    const fullText = (): string => {
      // headOf makes a new object: set on it, in place (the keys keep their order, as a
      // spread would keep them), instead of copying it once more.
      const head = headOf(session);
      head.revision = revision;
      head.updatedAt = updatedAt;
      return encodeFull({ ...head, messages } as Session);
    };
    let useDelta =
      adapter.capabilities.appendDeltas &&
      entry.storedRevision !== null &&
      prefixKept &&
      !this.compactionDue(entry);
    let text = useDelta
      ? encodeDelta(session, stored.length, messages.slice(stored.length), writtenHeadText)
      : fullText();
    let textBytes = Buffer.byteLength(text);
    if (useDelta && entry.storedBytes + textBytes > limits.maxDocumentBytes) {
      // Deltas repeat the head, so base + deltas can pass the limit before the document
      // does: a full write measures the document itself.
      useDelta = false;
      text = fullText();
      textBytes = Buffer.byteLength(text);
    }
    const totalBytes = useDelta ? entry.storedBytes + textBytes : textBytes;
    if (totalBytes > limits.maxDocumentBytes) {
      throw new LimitExceededError(
        'maxDocumentBytes',
        limits.maxDocumentBytes,
        totalBytes,
        `Session "${session.id}"`,
      );
    }
    const durable = options.fsync === true;
    // What is written, captured before the first await (the text above was made from it):
    // the caller may change the live session while the write is in flight, and those
    // changes must still count as unsaved afterwards.
    const writtenMessages = [...messages];
    // The id record normalizeMessages just made describes exactly this array (B5).
    rememberTranscript(entry, writtenMessages);
    const writtenSummary = summaryOf(session);
    writtenSummary.updatedAt = updatedAt;
    if (shrink) await retainStoredRevision(adapter, clock, session.id);
    const started = performance.now();
    const indexWithDocument =
      adapter.capabilities.indexWithDocument === true && options.skipIndex !== true;
    const write = { kind: useDelta ? 'delta' : 'full', revision, text } as const;
    let result: PutResult;
    try {
      // adapterCall's typing of the error, in this try (one wrapper fewer on every save).
      result = await adapter.putDocument(
        'sessions',
        session.id,
        write,
        indexWithDocument
          ? { expectedRevision: entry.storedRevision, durable, indexEntry: writtenSummary }
          : { expectedRevision: entry.storedRevision, durable },
      );
    } catch (error) {
      // B2, B4: it may have landed all the same; the next write of the entry finds out.
      this.unconfirmedWrites.remember(entry, {
        expectedRevision: entry.storedRevision,
        write,
        session,
      });
      throw toKeepsakeError(error, adapter.name, 'write a session');
    }
    if (!result.ok) {
      this.options.emit({ type: 'conflict', sessionId: session.id });
      throw new RevisionConflictError(session.id, entry.storedRevision, result.currentRevision);
    }
    entry.session = session;
    session.revision = revision;
    session.updatedAt = updatedAt;
    for (const message of useDelta ? writtenMessages.slice(stored.length) : writtenMessages) {
      deepFreeze(message);
    }
    entry.storedRevision = revision;
    entry.storedMessages = writtenMessages;
    entry.storedHeadText = writtenHeadText;
    entry.deltasSinceFull = useDelta ? entry.deltasSinceFull + 1 : 0;
    entry.deltaBytesSinceFull = useDelta ? entry.deltaBytesSinceFull + textBytes : 0;
    entry.storedBytes = totalBytes;
    entry.durable = durable;
    entry.indexStale = options.skipIndex === true;
    if (options.skipIndex !== true) {
      // B7: the document has landed, so this save succeeded whatever the index does; a
      // failed entry is reported and written again (IndexRepairs), never thrown as if the
      // save had failed (a retried create would then meet its own document).
      let indexFailure = indexWithDocument ? result.indexFailure : undefined;
      if (!indexWithDocument) {
        indexFailure = await adapterCall(adapter.name, 'update the session index', () =>
          adapter.putIndexEntry(writtenSummary, { durable }),
        ).then(
          () => undefined,
          (error: unknown) => (error instanceof Error ? error : new Error(String(error))),
        );
      }
      if (indexFailure === undefined) {
        this.indexRepairs.forget(session.id);
      } else {
        entry.indexStale = true;
        this.indexRepairs.failed(writtenSummary, indexFailure);
      }
    }
    this.options.emit({
      type: 'save',
      sessionId: session.id,
      durationMs: performance.now() - started,
      fsync: durable,
      delta: useDelta,
    });
    return session;
  }

  /**
   * Whether the next save should rewrite the document in full: enough deltas, and deltas
   * weighing at least `compactRatio` times the last full write. Compacting on a count alone
   * would rewrite a long history every few saves, O(history) per save.
   */
  private compactionDue(entry: CacheEntry): boolean {
    const { compactAfter, compactRatio } = this.options;
    if (entry.deltasSinceFull < compactAfter) return false;
    const fullBytes = entry.storedBytes - entry.deltaBytesSinceFull;
    return entry.deltaBytesSinceFull >= compactRatio * fullBytes;
  }

  /**
   * Whether the live session differs from what was last written (C4). Never throws: a
   * session the application filled with something that cannot be stored (a bigint, a
   * cycle) is dirty, so it stays cached and its save reports the problem to the caller,
   * instead of an unrelated call (an eviction check, a flush, a close) throwing.
   */
  isDirty(entry: CacheEntry): boolean {
    if (entry.storedRevision === null) return true;
    const { session } = entry;
    const stored = entry.storedMessages;
    if (!Array.isArray(session.messages) || session.messages.length !== stored.length) {
      return true;
    }
    if (stored.some((message, index) => session.messages[index] !== message)) return true;
    try {
      return headText(session) !== entry.storedHeadText;
    } catch {
      return true;
    }
  }
}
