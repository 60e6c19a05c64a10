import { codeGuard, KeepsakeError, type KeepsakeErrorOptions } from './keepsake-error.js';

// Errors of runs and their journals: pending-turn ownership (D4, E7) and appends (E2).

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

/**
 * D4, F1: an append by a run that another instance took over. Its journal holds that
 * instance's crash record (a repair that found the run silent past `recovery.graceMs`), so
 * the turn was already ended with what the run appended before it; this event would reach
 * no reader and is refused instead of acknowledged. The run is over (`run.active` is
 * false): stop producing (and paying for) output. One of the `JournalSealedError` family:
 * `JournalSealedError.isInstance` holds for it too.
 */
export class RunTakenOverError extends JournalSealedError {
  static override isInstance = (error: unknown): error is RunTakenOverError =>
    JournalSealedError.isInstance(error) && (error as { takenOver?: unknown }).takenOver === true;
  readonly takenOver = true;
  readonly sessionId: string;
  constructor(sessionId: string, runId: string) {
    super(runId, 'interrupted-by-crash');
    this.message = `Run "${runId}" of session "${sessionId}" was taken over by another instance (it found the run silent past recovery.graceMs and ended its turn with the output appended before); no further events are accepted`;
    this.name = 'RunTakenOverError';
    this.sessionId = sessionId;
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
      `Journal of run "${runId}": could not append sequence ${expectedSequence}; other writers kept taking it without the journal moving on (it ends at sequence ${currentLastSequence})`,
      { isRetryable: true },
    );
    this.name = 'JournalConflictError';
    this.runId = runId;
    this.expectedSequence = expectedSequence;
    this.currentLastSequence = currentLastSequence;
  }
}

/**
 * E2: a record whose identity (session, run, sequence) does not match its journal.
 * @deprecated Never thrown: reads skip such a record and report it in
 * `JournalReadResult.invalidRecords`, so one damaged record cannot hide the rest. Kept
 * exported so code that names it still compiles; it will be removed in the next major.
 */
export class JournalRecordInvalidError extends KeepsakeError {
  static override isInstance = codeGuard<JournalRecordInvalidError>('journal_record_invalid');
  constructor(message: string, options: KeepsakeErrorOptions = {}) {
    super('journal_record_invalid', message, options);
    this.name = 'JournalRecordInvalidError';
  }
}
