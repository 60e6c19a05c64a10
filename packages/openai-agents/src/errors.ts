import { KeepsakeError } from '@keepsake/core';

/**
 * A paused run was resumed already: another approver (maybe on another server instance)
 * claimed it first, and only one resume of a paused run may run its tools (B4: the claim is
 * a conditional write, so exactly one of two racing claims lands). Nothing was changed.
 */
export class RunStateAlreadyResumedError extends KeepsakeError {
  readonly sessionId: string;
  readonly pauseId: string;

  constructor(sessionId: string, pauseId: string) {
    super(
      'run_not_active',
      `The paused run ${pauseId} of session "${sessionId}" was resumed already; load the session to see how it went on`,
    );
    this.name = 'RunStateAlreadyResumedError';
    this.sessionId = sessionId;
    this.pauseId = pauseId;
  }

  static override isInstance(error: unknown): error is RunStateAlreadyResumedError {
    return (
      KeepsakeError.isInstance(error) &&
      error.code === 'run_not_active' &&
      error.name === 'RunStateAlreadyResumedError'
    );
  }
}
