import { codeGuard, KeepsakeError, type KeepsakeErrorOptions } from './keepsake-error.js';

// Errors of what is stored and of the backend that stores it: a missing or existing
// document, another writer's revision, unparseable bytes, an unreachable or failing backend.

/** No session (or retained revision) with that id: never deleted, or deleted since. */
export class NotFoundError extends KeepsakeError {
  static override isInstance = codeGuard<NotFoundError>('not_found');
  readonly sessionId: string;
  constructor(sessionId: string, what = 'session') {
    super('not_found', `No ${what} with id "${sessionId}"`);
    this.name = 'NotFoundError';
    this.sessionId = sessionId;
  }
}

/** create() or rename() to an id another session already holds (A1, D2). */
export class AlreadyExistsError extends KeepsakeError {
  static override isInstance = codeGuard<AlreadyExistsError>('already_exists');
  readonly sessionId: string;
  constructor(sessionId: string) {
    super('already_exists', `A session with id "${sessionId}" already exists`);
    this.name = 'AlreadyExistsError';
    this.sessionId = sessionId;
  }
}

/** B4: another writer saved this session since this store last read or wrote it. */
export class RevisionConflictError extends KeepsakeError {
  static override isInstance = codeGuard<RevisionConflictError>('revision_conflict');
  readonly sessionId: string;
  readonly expectedRevision: number | null;
  /** The revision now stored, or null when the session no longer exists. */
  readonly currentRevision: number | null;
  constructor(sessionId: string, expectedRevision: number | null, currentRevision: number | null) {
    super(
      'revision_conflict',
      `Session "${sessionId}" was changed by another writer: expected revision ${expectedRevision ?? 'none'}, found ${currentRevision ?? 'none'}. Reload it and apply the change again.`,
      { isRetryable: true },
    );
    this.name = 'RevisionConflictError';
    this.sessionId = sessionId;
    this.expectedRevision = expectedRevision;
    this.currentRevision = currentRevision;
  }
}

/** A2: a stored document that does not parse. Its bytes were moved to quarantine. */
export class CorruptDocumentError extends KeepsakeError {
  static override isInstance = codeGuard<CorruptDocumentError>('corrupt_document');
  readonly sessionId: string;
  readonly adapter: string;
  readonly quarantineLocation: string | null;
  constructor(
    sessionId: string,
    adapter: string,
    quarantineLocation: string | null,
    options: KeepsakeErrorOptions = {},
  ) {
    super(
      'corrupt_document',
      `Stored session "${sessionId}" on the ${adapter} backend does not parse; its bytes were quarantined${quarantineLocation ? ` at ${quarantineLocation}` : ''} and nothing was overwritten`,
      options,
    );
    this.name = 'CorruptDocumentError';
    this.sessionId = sessionId;
    this.adapter = adapter;
    this.quarantineLocation = quarantineLocation;
  }
}

/** The backend could not be reached (connection refused, timeout). Retryable. */
export class BackendUnavailableError extends KeepsakeError {
  static override isInstance = codeGuard<BackendUnavailableError>('backend_unavailable');
  readonly adapter: string;
  constructor(adapter: string, message: string, options: KeepsakeErrorOptions = {}) {
    super('backend_unavailable', `${adapter} backend unavailable: ${message}`, {
      isRetryable: true,
      ...options,
    });
    this.name = 'BackendUnavailableError';
    this.adapter = adapter;
  }
}

/** A2: a read or write failed for a reason other than corruption (permission, I/O). */
export class BackendError extends KeepsakeError {
  static override isInstance = codeGuard<BackendError>('backend_error');
  readonly adapter: string;
  readonly operation: string;
  constructor(adapter: string, operation: string, options: KeepsakeErrorOptions = {}) {
    const causeText = options.cause instanceof Error ? `: ${options.cause.message}` : '';
    super('backend_error', `${adapter} backend failed to ${operation}${causeText}`, options);
    this.name = 'BackendError';
    this.adapter = adapter;
    this.operation = operation;
  }
}

/**
 * B2, B4: a write that may or may not have been stored. The adapter cannot tell which (a
 * network call that timed out after it was sent), or it knows the new document is there but
 * not that it is durable (its data reached the filesystem, but the fsync that makes it survive
 * a power loss failed). A `BackendError` like any other backend failure (its `code` is
 * `backend_error`), told apart by `WriteOutcomeUnknownError.isInstance` or `outcome`.
 *
 * Retrying is safe: before it writes the session again, the store reads what is stored and
 * recognises its own write, so a retry neither duplicates the change nor reports this store's
 * own revision as another writer's (`RevisionConflictError`).
 */
export class WriteOutcomeUnknownError extends BackendError {
  static override isInstance = (error: unknown): error is WriteOutcomeUnknownError =>
    BackendError.isInstance(error) && (error as { outcome?: unknown }).outcome === 'unknown';
  readonly outcome = 'unknown' as const;
  constructor(adapter: string, operation: string, options: KeepsakeErrorOptions = {}) {
    super(adapter, operation, { isRetryable: true, ...options });
    const causeText = options.cause instanceof Error ? ` (${options.cause.message})` : '';
    this.message = `${adapter} backend: the outcome of "${operation}" is unknown${causeText}: the write may or may not have been stored durably. Retrying is safe: the store checks what is stored before this session's next write.`;
    this.name = 'WriteOutcomeUnknownError';
  }
}

/** H1: an operation needs a capability the adapter does not declare. */
export class CapabilityMissingError extends KeepsakeError {
  static override isInstance = codeGuard<CapabilityMissingError>('capability_missing');
  constructor(adapter: string, capability: string) {
    super(
      'capability_missing',
      `The ${adapter} adapter does not declare the "${capability}" capability`,
    );
    this.name = 'CapabilityMissingError';
  }
}

/**
 * A write refused because the adapter or the store was opened read-only (an inspection
 * tool's open: `fsAdapter({ readOnly: true })`, `createSessionStore({ readOnly: true })`).
 * Never a silent no-op: every write primitive of a read-only adapter and every write call of
 * a read-only store throws it. A `CapabilityMissingError` (code `capability_missing`: the
 * capability to write), told apart by `ReadOnlyError.isInstance` or `readOnly`.
 */
export class ReadOnlyError extends CapabilityMissingError {
  static override isInstance = (error: unknown): error is ReadOnlyError =>
    CapabilityMissingError.isInstance(error) && (error as { readOnly?: unknown }).readOnly === true;
  readonly readOnly = true as const;
  /** What was refused, e.g. "write sessions/chat-1". */
  readonly operation: string;
  constructor(owner: string, operation: string) {
    super(owner, 'write');
    this.operation = operation;
    this.message = `${owner} was opened read-only: "${operation}" is refused (nothing was written)`;
    this.name = 'ReadOnlyError';
  }
}
