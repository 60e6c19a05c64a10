import { BackendError, BackendUnavailableError } from '@keepsake/core';
import { ReplyError } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { toKeepsakeError } from '../src/errors.js';

/**
 * C3: what a Redis reply error becomes. A failover found this one: WAIT (or WAITAOF) cut
 * short by the master's demotion answers UNBLOCKED, after the write ran on the old master,
 * so its outcome is unknown and the error must be retryable (cluster-failover.test.ts).
 */
describe('toKeepsakeError', () => {
  it('UNBLOCKED (demoted while waiting for replicas) is retryable and says the outcome is unknown', () => {
    const error = toKeepsakeError(
      new ReplyError(
        'UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)',
      ),
      'write a document',
    );
    expect(BackendUnavailableError.isInstance(error)).toBe(true);
    expect(error.isRetryable).toBe(true);
    expect(error.message).toMatch(/may or may not have been applied/);
  });

  it('a refusal while the server cannot serve (LOADING) is retryable; any other reply is not', () => {
    expect(toKeepsakeError(new ReplyError('LOADING Redis is loading'), 'read').isRetryable).toBe(
      true,
    );
    const other = toKeepsakeError(new ReplyError('ERR wrong number of arguments'), 'read');
    expect(BackendError.isInstance(other)).toBe(true);
    expect(other.isRetryable).toBe(false);
  });
});
