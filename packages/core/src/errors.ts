/**
 * Typed errors. Every error Keepsake throws is a `KeepsakeError` with a stable `code`;
 * callers branch on `code` or on `XError.isInstance(error)`, never on message text.
 * The `Symbol.for` marker keeps `isInstance` working when two copies of the package are
 * loaded (a workspace and a published tarball, for example), where `instanceof` fails.
 */
const keepsakeMarker = Symbol.for('keepsake.error');

export type KeepsakeErrorCode =
  | 'invalid_id'
  | 'not_found'
  | 'already_exists'
  | 'revision_conflict'
  | 'corrupt_document'
  | 'limit_exceeded'
  | 'shrink_refused'
  | 'summary_only'
  | 'reserved_field'
  | 'lock_reentry'
  | 'backend_unavailable'
  | 'backend_error'
  | 'invalid_config'
  | 'invalid_input'
  | 'store_closed'
  | 'session_busy'
  | 'run_not_active'
  | 'journal_sealed'
  | 'journal_conflict'
  | 'journal_record_invalid'
  | 'capability_missing'
  | 'memory_commit_incomplete'
  | 'timeout';

export interface KeepsakeErrorOptions {
  cause?: unknown;
  isRetryable?: boolean;
}

export class KeepsakeError extends Error {
  readonly [keepsakeMarker] = true;
  readonly code: KeepsakeErrorCode;
  readonly isRetryable: boolean;

  constructor(code: KeepsakeErrorCode, message: string, options: KeepsakeErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'KeepsakeError';
    this.code = code;
    this.isRetryable = options.isRetryable ?? false;
  }

  static isInstance(error: unknown): error is KeepsakeError {
    return (
      typeof error === 'object' &&
      error !== null &&
      (error as Record<symbol, unknown>)[keepsakeMarker] === true
    );
  }
}

/** Builds `isInstance` for a subclass: marker check plus the stable code. */
function codeGuard<T extends KeepsakeError>(code: KeepsakeErrorCode) {
  return (error: unknown): error is T => KeepsakeError.isInstance(error) && error.code === code;
}

/** A1: an id that could escape a path, match a key pattern, or is empty or too long. */
export class InvalidIdError extends KeepsakeError {
  static override isInstance = codeGuard<InvalidIdError>('invalid_id');
  readonly kind: string;
  readonly value: unknown;
  constructor(kind: string, value: unknown, reason: string) {
    super('invalid_id', `Invalid ${kind} id ${describeValue(value)}: ${reason}`);
    this.name = 'InvalidIdError';
    this.kind = kind;
    this.value = value;
  }
}

export class NotFoundError extends KeepsakeError {
  static override isInstance = codeGuard<NotFoundError>('not_found');
  readonly sessionId: string;
  constructor(sessionId: string, what = 'session') {
    super('not_found', `No ${what} with id "${sessionId}"`);
    this.name = 'NotFoundError';
    this.sessionId = sessionId;
  }
}

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

/** A3: a configured limit (document size, message count, journal event size). */
export class LimitExceededError extends KeepsakeError {
  static override isInstance = codeGuard<LimitExceededError>('limit_exceeded');
  readonly limit: string;
  readonly maximum: number;
  readonly actual: number;
  constructor(limit: string, maximum: number, actual: number, subject: string) {
    super(
      'limit_exceeded',
      `${subject} exceeds the ${limit} limit (${actual} > ${maximum}); raise the \`limits.${limit}\` option if this is intended. Nothing was written.`,
    );
    this.name = 'LimitExceededError';
    this.limit = limit;
    this.maximum = maximum;
    this.actual = actual;
  }
}

/** B5: a save that would remove stored messages without `allowShrink`. */
export class ShrinkRefusedError extends KeepsakeError {
  static override isInstance = codeGuard<ShrinkRefusedError>('shrink_refused');
  readonly sessionId: string;
  readonly missingMessageIds: string[];
  constructor(sessionId: string, missingMessageIds: string[]) {
    super(
      'shrink_refused',
      `Saving session "${sessionId}" would remove ${missingMessageIds.length} stored message(s); pass { allowShrink: true } for a deliberate undo, retry or clear`,
    );
    this.name = 'ShrinkRefusedError';
    this.sessionId = sessionId;
    this.missingMessageIds = missingMessageIds;
  }
}

/** B5: a session loaded without its messages cannot be saved. */
export class SummaryOnlyError extends KeepsakeError {
  static override isInstance = codeGuard<SummaryOnlyError>('summary_only');
  readonly sessionId: string;
  constructor(sessionId: string) {
    super(
      'summary_only',
      `Session "${sessionId}" was loaded as a summary (without messages) and cannot be saved; load it in full first`,
    );
    this.name = 'SummaryOnlyError';
    this.sessionId = sessionId;
  }
}

/** A4: fields beginning with `_keepsake` belong to the store. */
export class ReservedFieldError extends KeepsakeError {
  static override isInstance = codeGuard<ReservedFieldError>('reserved_field');
  readonly field: string;
  constructor(field: string, where: string) {
    super(
      'reserved_field',
      `Field "${field}" on ${where} is reserved: names beginning with "_keepsake" belong to the store`,
    );
    this.name = 'ReservedFieldError';
    this.field = field;
  }
}

/** D1: `withLock` re-entered from the async context that already holds it. */
export class LockReentryError extends KeepsakeError {
  static override isInstance = codeGuard<LockReentryError>('lock_reentry');
  readonly sessionId: string;
  constructor(sessionId: string) {
    super(
      'lock_reentry',
      `The lock of session "${sessionId}" is already held by this async context; re-entering it would deadlock`,
    );
    this.name = 'LockReentryError';
    this.sessionId = sessionId;
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

export class InvalidConfigError extends KeepsakeError {
  static override isInstance = codeGuard<InvalidConfigError>('invalid_config');
  constructor(message: string, options: KeepsakeErrorOptions = {}) {
    super('invalid_config', message, options);
    this.name = 'InvalidConfigError';
  }
}

/** Input from the caller (a message, an event, an option) that fails validation. */
export class InvalidInputError extends KeepsakeError {
  static override isInstance = codeGuard<InvalidInputError>('invalid_input');
  constructor(message: string, options: KeepsakeErrorOptions = {}) {
    super('invalid_input', message, options);
    this.name = 'InvalidInputError';
  }
}

/** C5: the store is closing or closed. */
export class StoreClosedError extends KeepsakeError {
  static override isInstance = codeGuard<StoreClosedError>('store_closed');
  constructor(operation: string) {
    super('store_closed', `Cannot ${operation}: the session store is closing or closed`);
    this.name = 'StoreClosedError';
  }
}

/** E7: a run already owns the session's pending turn. */
export class SessionBusyError extends KeepsakeError {
  static override isInstance = codeGuard<SessionBusyError>('session_busy');
  readonly sessionId: string;
  readonly activeStreamId: string;
  constructor(sessionId: string, activeStreamId: string) {
    super(
      'session_busy',
      `Session "${sessionId}" already has an active run (stream "${activeStreamId}"); cancel it or wait for it to finish`,
      { isRetryable: true },
    );
    this.name = 'SessionBusyError';
    this.sessionId = sessionId;
    this.activeStreamId = activeStreamId;
  }
}

/** D4: a run whose stream is no longer the session's active stream (fenced out). */
export class RunNotActiveError extends KeepsakeError {
  static override isInstance = codeGuard<RunNotActiveError>('run_not_active');
  readonly sessionId: string;
  readonly runId: string;
  constructor(sessionId: string, runId: string, reason: string) {
    super('run_not_active', `Run "${runId}" of session "${sessionId}" is not active: ${reason}`);
    this.name = 'RunNotActiveError';
    this.sessionId = sessionId;
    this.runId = runId;
  }
}

/** E2: an append to a journal whose terminal state is final. */
export class JournalSealedError extends KeepsakeError {
  static override isInstance = codeGuard<JournalSealedError>('journal_sealed');
  readonly runId: string;
  readonly terminalState: string;
  constructor(runId: string, terminalState: string) {
    super(
      'journal_sealed',
      `The journal of run "${runId}" is sealed (${terminalState}); no further events are accepted`,
    );
    this.name = 'JournalSealedError';
    this.runId = runId;
    this.terminalState = terminalState;
  }
}

/** E2: another writer appended to this journal (sequence already taken). */
export class JournalConflictError extends KeepsakeError {
  static override isInstance = codeGuard<JournalConflictError>('journal_conflict');
  readonly runId: string;
  readonly expectedSequence: number;
  readonly currentLastSequence: number;
  constructor(runId: string, expectedSequence: number, currentLastSequence: number) {
    super(
      'journal_conflict',
      `Journal of run "${runId}": sequence ${expectedSequence} is not next (last stored is ${currentLastSequence})`,
      { isRetryable: true },
    );
    this.name = 'JournalConflictError';
    this.runId = runId;
    this.expectedSequence = expectedSequence;
    this.currentLastSequence = currentLastSequence;
  }
}

/** E2: a record whose identity (session, run, sequence) does not match its journal. */
export class JournalRecordInvalidError extends KeepsakeError {
  static override isInstance = codeGuard<JournalRecordInvalidError>('journal_record_invalid');
  constructor(message: string, options: KeepsakeErrorOptions = {}) {
    super('journal_record_invalid', message, options);
    this.name = 'JournalRecordInvalidError';
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

/** G6: a drain left a session's completed turns uncommitted (no agent, or its commit failed). */
export class MemoryCommitIncompleteError extends KeepsakeError {
  static override isInstance = codeGuard<MemoryCommitIncompleteError>('memory_commit_incomplete');
  readonly sessionId: string;
  constructor(sessionId: string) {
    super(
      'memory_commit_incomplete',
      `Session "${sessionId}" still has uncommitted memory: no agent could commit it, or its commit failed; register an agent or pass one to drain({ agents })`,
      { isRetryable: true },
    );
    this.name = 'MemoryCommitIncompleteError';
    this.sessionId = sessionId;
  }
}

export class TimeoutError extends KeepsakeError {
  static override isInstance = codeGuard<TimeoutError>('timeout');
  constructor(message: string) {
    super('timeout', message, { isRetryable: true });
    this.name = 'TimeoutError';
  }
}

function describeValue(value: unknown): string {
  if (typeof value !== 'string') return `(${typeof value})`;
  const shown = value.length > 40 ? `${value.slice(0, 40)}…` : value;
  return JSON.stringify(shown);
}
