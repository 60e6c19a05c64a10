import { codeGuard, KeepsakeError, type KeepsakeErrorOptions } from './keepsake-error.js';

// Errors of a call that is wrong as made: an invalid id, input or option, a limit, a refused
// save or re-entered lock. Retrying the same call fails the same way; changing it is the fix.

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

/** A store or adapter option that fails validation, named in the message. */
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
  /**
   * Where in the input the fault is, when one place is at fault: `metadata.n`,
   * `messages[3].content`, the option `fsync`; `''` for the input as a whole. Null when
   * the check does not point at one place.
   */
  readonly path: string | null;
  constructor(message: string, options: KeepsakeErrorOptions & { path?: string } = {}) {
    const { path, ...rest } = options;
    super('invalid_input', message, rest);
    this.name = 'InvalidInputError';
    this.path = path ?? null;
  }
}

function describeValue(value: unknown): string {
  if (typeof value !== 'string') return `(${typeof value})`;
  const shown = value.length > 40 ? `${value.slice(0, 40)}…` : value;
  return JSON.stringify(shown);
}
