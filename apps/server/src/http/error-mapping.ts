import { KeepsakeError, type KeepsakeErrorCode } from '@keepsake/core';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ClientRequestError, quoteInput } from './client-errors.js';

/** The body of every error response: a stable `code` to branch on and a message to show. */
export interface ErrorBody {
  error: { code: string; message: string; details?: unknown };
}

/**
 * Typed core errors → HTTP statuses. Client mistakes are 4xx, contention is 409 (the
 * client may retry), an unreachable or closing backend is 503, and only a defect or a
 * damaged document is a 500.
 */
const statusByCode: Record<KeepsakeErrorCode, number> = {
  invalid_id: 400,
  invalid_input: 400,
  reserved_field: 400,
  not_found: 404,
  already_exists: 409,
  revision_conflict: 409,
  shrink_refused: 409,
  summary_only: 409,
  session_busy: 409,
  run_not_active: 409,
  journal_sealed: 409,
  journal_conflict: 409,
  limit_exceeded: 413,
  capability_missing: 501,
  backend_unavailable: 503,
  store_closed: 503,
  memory_commit_incomplete: 503,
  timeout: 504,
  corrupt_document: 500,
  lock_reentry: 500,
  backend_error: 500,
  invalid_config: 500,
  journal_record_invalid: 500,
};

export function httpStatusOf(error: KeepsakeError): number {
  return statusByCode[error.code] ?? 500;
}

export function errorBody(code: string, message: string, details?: unknown): ErrorBody {
  return { error: details === undefined ? { code, message } : { code, message, details } };
}

export interface ErrorHandlingOptions {
  /** The configured body limit, named in a 413's message. */
  bodyLimitBytes: number;
  /** A request failed on the backend (unavailable, outcome unknown, backend failure): metrics. */
  onBackendError?: (code: string) => void;
}

/** The codes that say the backend, not the request, failed. */
const BACKEND_ERROR_CODES = new Set(['backend_unavailable', 'backend_error', 'timeout']);

/**
 * One error handler for the whole app, so every error reply has the one shape
 * `{ error: { code, message, details? } }`. Framework 4xx errors (bad JSON, body too large,
 * wrong content type) keep their status with a message that says what to send instead;
 * anything unexpected is logged and answered with a generic 500 that leaks no internals.
 */
export function installErrorHandling(app: FastifyInstance, options: ErrorHandlingOptions): void {
  app.setErrorHandler((error: FastifyError | KeepsakeError, request, reply) => {
    if (KeepsakeError.isInstance(error)) {
      const status = httpStatusOf(error);
      if (BACKEND_ERROR_CODES.has(error.code)) {
        options.onBackendError?.(error.code);
      }
      if (status >= 500) request.log.error({ err: error }, 'request failed');
      if (status === 503) reply.header('retry-after', '1');
      return reply.code(status).send(errorBody(error.code, error.message, issuesOf(error)));
    }
    if (error instanceof ClientRequestError) {
      return reply.code(error.statusCode).send(errorBody(error.code, error.message));
    }
    const status = typeof error.statusCode === 'number' ? error.statusCode : 500;
    if (status >= 400 && status < 500) {
      const framework = describeFrameworkError(error, status, request, options);
      return reply.code(framework.status).send(errorBody(framework.code, framework.message));
    }
    request.log.error({ err: error }, 'unexpected error');
    return reply.code(500).send(errorBody('internal_error', 'Internal server error'));
  });
  app.setNotFoundHandler((request, reply) => {
    reply.code(404).send(routeNotFound(request));
  });
}

/**
 * Fastify's `frameworkErrors` option: errors raised before routing (a malformed URL), which
 * would otherwise be answered in Fastify's own shape.
 */
export function answerFrameworkError(
  error: FastifyError,
  request: FastifyRequest,
  reply: FastifyReply,
): void {
  if (error.code === 'FST_ERR_BAD_URL') {
    reply
      .code(400)
      .send(
        errorBody(
          'bad_url',
          `The URL ${quoteInput(request.url)} is malformed: a "%" must start a percent-escape of two hexadecimal digits`,
        ),
      );
    return;
  }
  if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    reply
      .code(400)
      .send(
        errorBody('invalid_input', 'A path parameter is longer than any valid id (128 characters)'),
      );
    return;
  }
  request.log.error({ err: error }, 'unexpected framework error');
  reply.code(500).send(errorBody('internal_error', 'Internal server error'));
}

/** Input errors carry their zod issues as `details`, so a client can point at the field. */
function issuesOf(error: KeepsakeError): unknown {
  const cause = error.cause as { issues?: Array<{ path: PropertyKey[]; message: string }> };
  if (error.code !== 'invalid_input' || !Array.isArray(cause?.issues)) return undefined;
  return cause.issues.map((issue) => ({ path: issue.path.map(String), message: issue.message }));
}

function routeNotFound(request: FastifyRequest): ErrorBody {
  return errorBody('route_not_found', `No route for ${request.method} ${quoteInput(request.url)}`);
}

/** The status, code and message of a framework 4xx, in words a client can act on. */
function describeFrameworkError(
  error: FastifyError,
  status: number,
  request: FastifyRequest,
  options: ErrorHandlingOptions,
): { status: number; code: string; message: string } {
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return {
        status: 413,
        code: 'body_too_large',
        message: `The body is larger than the limit of ${options.bodyLimitBytes} bytes (KEEPSAKE_BODY_LIMIT_BYTES)`,
      };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return {
        status: 415,
        code: 'unsupported_media_type',
        message: `The content type ${quoteInput(request.headers['content-type'] ?? '')} is not accepted: send the body as application/json`,
      };
    // @fastify/static refuses paths it cannot map to a file (non-canonical, too long): for
    // a client there is simply nothing at that URL.
    case 'FST_STATIC_FORBIDDEN_PATH':
      return { status: 404, ...routeNotFound(request).error };
    default:
      return {
        status,
        code: status === 413 ? 'body_too_large' : status === 429 ? 'rate_limited' : 'bad_request',
        message: error.message,
      };
  }
}
