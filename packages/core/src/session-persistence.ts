import type { StorageAdapter } from './adapter.js';
import { adapterCall } from './adapter-call.js';
import type { Clock } from './clock.js';
import {
  decodeSession,
  deepFreeze,
  encodeDelta,
  encodeFull,
  findReservedField,
  headOf,
  isPlainObject,
  summaryOf,
} from './document-codec.js';
import {
  CorruptDocumentError,
  InvalidInputError,
  LimitExceededError,
  NotFoundError,
  ReservedFieldError,
  RevisionConflictError,
  ShrinkRefusedError,
} from './errors.js';
import { randomId } from './ids.js';
import { type Message, messageSchema, type Session, sessionSchema } from './schemas.js';
import type { CacheEntry } from './session-cache.js';
import type { SaveOptions, StoreEvent, StoreLimits } from './store-types.js';

const headSchema = sessionSchema.omit({ messages: true });

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
  constructor(private readonly options: PersistenceOptions) {}

  /** Reads a session from storage into a fresh cache entry. */
  async read(id: string): Promise<CacheEntry> {
    const entry = await this.readOrNull(id);
    if (entry === null) throw new NotFoundError(id);
    return entry;
  }

  async readOrNull(id: string): Promise<CacheEntry | null> {
    const { adapter, clock } = this.options;
    const stored = await adapterCall(adapter.name, 'read a session', () =>
      adapter.getDocument('sessions', id),
    );
    if (stored === null) return null;
    const decoded = decodeSession(id, stored, clock.now());
    if (!decoded.ok) {
      // A2: never replace it with an empty session; move it aside intact and say so.
      const location = await adapterCall(adapter.name, 'quarantine a document', () =>
        adapter.quarantineDocument('sessions', id, decoded.reason),
      );
      this.options.emit({ type: 'quarantine', sessionId: id, location });
      throw new CorruptDocumentError(id, adapter.name, location, {
        cause: new Error(decoded.reason),
      });
    }
    for (const problem of decoded.problems) {
      this.options.emit({
        type: 'warning',
        sessionId: id,
        field: problem.field,
        message: problem.message,
      });
    }
    const session = decoded.session;
    for (const message of session.messages) deepFreeze(message);
    return {
      session,
      storedRevision: stored.revision,
      storedMessages: [...session.messages],
      storedHeadText: JSON.stringify(headOf(session)),
      deltasSinceFull: stored.deltas.length,
      deltaBytesSinceFull: decoded.byteSize - stored.base.length,
      storedBytes: decoded.byteSize,
      durable: true,
      indexStale: false,
    };
  }

  /** B5: reads a retained revision as a detached entry (never cached, never saved). */
  async readRetained(retainedId: string, sessionId: string): Promise<CacheEntry> {
    const { adapter, clock } = this.options;
    const stored = await adapterCall(adapter.name, 'read a retained revision', () =>
      adapter.getDocument('revisions', retainedId),
    );
    if (stored === null) throw new NotFoundError(retainedId, 'retained revision');
    const decoded = decodeSession(sessionId, { ...stored, revision: 0 }, clock.now());
    if (!decoded.ok) {
      throw new CorruptDocumentError(sessionId, adapter.name, null, {
        cause: new Error(decoded.reason),
      });
    }
    const revision = Number(retainedId.slice(sessionId.length + 1));
    decoded.session.revision = revision;
    return {
      session: decoded.session,
      storedRevision: revision,
      storedMessages: [...decoded.session.messages],
      storedHeadText: null,
      deltasSinceFull: 0,
      deltaBytesSinceFull: 0,
      storedBytes: decoded.byteSize,
      durable: true,
      indexStale: false,
    };
  }

  /**
   * Writes the entry's session (B1–B7). On failure nothing in the entry changes.
   * `rewriteRevision` (C1, clean sessions only) re-persists the stored revision as it is,
   * so a flush never bumps a revision another instance holds.
   */
  async write(
    entry: CacheEntry,
    options: SaveOptions & { rewriteRevision?: boolean },
  ): Promise<Session> {
    const { adapter, clock, limits } = this.options;
    const session = entry.session;
    const now = clock.now();
    this.assertWritable(session);
    this.normalizeMessages(session, entry.storedMessages, now);
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
    const prefixKept =
      messages.length >= stored.length &&
      stored.every((message, index) => messages[index] === message);
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
    const head = { ...headOf(session), revision, updatedAt };
    let useDelta =
      adapter.capabilities.appendDeltas &&
      entry.storedRevision !== null &&
      prefixKept &&
      !this.compactionDue(entry);
    let text = useDelta
      ? encodeDelta(head, stored.length, messages.slice(stored.length))
      : encodeFull({ ...head, messages } as Session);
    let textBytes = Buffer.byteLength(text);
    if (useDelta && entry.storedBytes + textBytes > limits.maxDocumentBytes) {
      // Deltas repeat the head, so base + deltas can pass the limit before the document
      // does: a full write measures the document itself.
      useDelta = false;
      text = encodeFull({ ...head, messages } as Session);
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
    if (shrink) await this.retainStoredRevision(session.id);
    const durable = options.fsync === true;
    // What is written, captured now: the caller may change the live session while the
    // write is in flight, and those changes must still count as unsaved afterwards.
    const writtenMessages = [...messages];
    const writtenHeadText = JSON.stringify({ ...headOf(session), revision, updatedAt });
    const writtenSummary = { ...summaryOf(session), updatedAt };
    const started = performance.now();
    const indexWithDocument =
      adapter.capabilities.indexWithDocument === true && options.skipIndex !== true;
    const result = await adapterCall(adapter.name, 'write a session', () =>
      adapter.putDocument(
        'sessions',
        session.id,
        { kind: useDelta ? 'delta' : 'full', revision, text },
        indexWithDocument
          ? { expectedRevision: entry.storedRevision, durable, indexEntry: writtenSummary }
          : { expectedRevision: entry.storedRevision, durable },
      ),
    );
    if (!result.ok) {
      this.options.emit({ type: 'conflict', sessionId: session.id });
      throw new RevisionConflictError(session.id, entry.storedRevision, result.currentRevision);
    }
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
    if (options.skipIndex !== true && !indexWithDocument) {
      await adapterCall(adapter.name, 'update the session index', () =>
        adapter.putIndexEntry(writtenSummary, { durable }),
      );
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

  /** Whether the live session differs from what was last written (C4). */
  isDirty(entry: CacheEntry): boolean {
    if (entry.storedRevision === null) return true;
    const { session } = entry;
    const stored = entry.storedMessages;
    if (session.messages.length !== stored.length) return true;
    if (stored.some((message, index) => session.messages[index] !== message)) return true;
    return JSON.stringify(headOf(session)) !== entry.storedHeadText;
  }

  /** B5: keeps the stored revision before a deliberate shrink, readable only on request. */
  private async retainStoredRevision(id: string): Promise<void> {
    const { adapter, clock } = this.options;
    const stored = await adapterCall(adapter.name, 'read a session', () =>
      adapter.getDocument('sessions', id),
    );
    if (stored === null) return;
    const decoded = decodeSession(id, stored, clock.now());
    const text = decoded.ok ? encodeFull(decoded.session) : stored.base;
    const retainedId = `${id}.${stored.revision}`;
    await adapterCall(adapter.name, 'retain a revision', () =>
      adapter.putDocument(
        'revisions',
        retainedId,
        { kind: 'full', revision: 1, text },
        {
          expectedRevision: null,
          durable: true,
        },
      ),
    );
  }

  /** A4 and schema checks of what the caller wrote; nothing is written when they fail. */
  private assertWritable(session: Session): void {
    const reserved = findReservedField(session);
    if (reserved !== null) throw new ReservedFieldError(reserved, `session "${session.id}"`);
    const head = headSchema.safeParse(headOf(session));
    if (!head.success) {
      const issue = head.error.issues[0];
      throw new InvalidInputError(
        `Session "${session.id}" has an invalid field \`${issue?.path.join('.')}\`: ${issue?.message}`,
        { cause: head.error },
      );
    }
    if (session.pending !== null) {
      const field = findReservedField(session.pending.userMessage);
      if (field !== null) throw new ReservedFieldError(field, 'the pending user message');
    }
  }

  /** Fills ids and timestamps of new messages and validates them (stored ones were checked). */
  private normalizeMessages(session: Session, stored: readonly Message[], now: number): void {
    if (!Array.isArray(session.messages)) {
      throw new InvalidInputError(`Session "${session.id}" messages must be an array`);
    }
    const messages = session.messages;
    let firstChanged = 0;
    while (firstChanged < stored.length && messages[firstChanged] === stored[firstChanged]) {
      firstChanged++;
    }
    // Stored messages are frozen and were validated when written; check only the rest.
    const storedSet = firstChanged < stored.length ? new Set(stored) : null;
    for (let index = firstChanged; index < messages.length; index++) {
      const candidate = messages[index];
      if (storedSet?.has(candidate as Message)) continue;
      messages[index] = normalizeMessage(
        candidate,
        now,
        `session "${session.id}" messages[${index}]`,
      );
    }
  }
}

/** Validates one caller-written message and fills `id` and `createdAt` when missing. */
export function normalizeMessage(candidate: unknown, now: number, where: string): Message {
  if (!isPlainObject(candidate)) throw new InvalidInputError(`${where} must be an object`);
  const reserved = findReservedField(candidate);
  if (reserved !== null) throw new ReservedFieldError(reserved, where);
  const filled =
    candidate.id === undefined || candidate.createdAt === undefined
      ? { ...candidate, id: candidate.id ?? randomId(), createdAt: candidate.createdAt ?? now }
      : candidate;
  const parsed = messageSchema.safeParse(filled);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new InvalidInputError(
      `${where} is invalid at \`${issue?.path.join('.')}\`: ${issue?.message}`,
      {
        cause: parsed.error,
      },
    );
  }
  return filled as Message;
}
