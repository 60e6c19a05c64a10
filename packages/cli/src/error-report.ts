import { KeepsakeError } from '@keepsake/core';
import { CliError } from './cli-errors.js';
import { EXIT_CODES } from './exit-codes.js';

/** errno codes of a filesystem that refuses access (as opposed to failing). */
const PERMISSION_ERRNOS = new Set(['EACCES', 'EPERM', 'EROFS']);
/** Redis error replies (their first word, the protocol's error code) that refuse access. */
const PERMISSION_REPLIES = new Set(['NOAUTH', 'WRONGPASS', 'NOPERM']);
/** S3 error codes (the SDK's error `name`) that refuse access. */
const PERMISSION_S3_CODES = new Set([
  'AccessDenied',
  'InvalidAccessKeyId',
  'SignatureDoesNotMatch',
  'ExpiredToken',
  'InvalidToken',
]);

export interface ErrorReport {
  exitCode: number;
  message: string;
}

/**
 * Maps anything a command threw to its exit code and the message the operator reads. The
 * CLI's own errors carry their code; Keepsake's typed errors are mapped by `code` (and a
 * backend error by what caused it); anything else is a failure the CLI did not expect.
 */
export function reportError(error: unknown): ErrorReport {
  const own = cliErrorIn(error);
  if (own !== null) return { exitCode: own.exitCode, message: own.message };
  if (KeepsakeError.isInstance(error)) {
    return { exitCode: keepsakeExitCode(error), message: error.message };
  }
  const message = error instanceof Error ? error.message : String(error);
  return { exitCode: EXIT_CODES.failure, message: `unexpected failure: ${message}` };
}

/**
 * The CLI's own error, also where core wrapped it: an error the migration's target wrapper
 * throws reaches the CLI as the cause of core's BackendError ("failed to write a document").
 */
function cliErrorIn(error: unknown): CliError | null {
  let cause: unknown = error;
  for (let depth = 0; typeof cause === 'object' && cause !== null && depth < 10; depth++) {
    if (CliError.isInstance(cause)) return cause;
    cause = (cause as { cause?: unknown }).cause;
  }
  return null;
}

function keepsakeExitCode(error: KeepsakeError): number {
  switch (error.code) {
    case 'not_found':
      return EXIT_CODES.notFound;
    case 'invalid_id':
    case 'invalid_input':
      return EXIT_CODES.usage;
    case 'invalid_config':
      // Adapter options come from the URL: a bad one is a bad URL.
      return EXIT_CODES.badUrl;
    case 'backend_unavailable':
      return EXIT_CODES.unreachable;
    case 'backend_error':
      if (isPermissionFailure(error)) return EXIT_CODES.permission;
      // @keepsake/s3's open(): the bucket does not exist (S3CapabilityError, capability "bucket").
      if ((error as { capability?: unknown }).capability === 'bucket') return EXIT_CODES.notFound;
      return EXIT_CODES.backendError;
    case 'corrupt_document':
      return EXIT_CODES.problemsFound;
    case 'already_exists':
      return EXIT_CODES.conflict;
    default:
      return EXIT_CODES.failure;
  }
}

/** Walks the cause chain for an errno or a Redis reply that means "access refused". */
export function isPermissionFailure(error: unknown): boolean {
  let cause: unknown = error;
  for (let depth = 0; typeof cause === 'object' && cause !== null && depth < 10; depth++) {
    const { code, message, name } = cause as { code?: unknown; message?: unknown; name?: unknown };
    if (typeof code === 'string' && PERMISSION_ERRNOS.has(code)) return true;
    if (typeof name === 'string' && PERMISSION_S3_CODES.has(name)) return true;
    // An S3 reply without a body (a HEAD) has no error code, only its HTTP status.
    const status = (cause as { $metadata?: { httpStatusCode?: unknown } }).$metadata
      ?.httpStatusCode;
    if (status === 403) return true;
    // A Redis error reply starts with its error code, by the protocol (RESP "-CODE text");
    // Keepsake's own messages are never read this way.
    if (!KeepsakeError.isInstance(cause) && typeof message === 'string') {
      if (PERMISSION_REPLIES.has(message.split(' ', 1)[0] ?? '')) return true;
    }
    cause = (cause as { cause?: unknown }).cause;
  }
  return false;
}
