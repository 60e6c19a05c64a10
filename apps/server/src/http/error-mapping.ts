import { KeepsakeError, type KeepsakeErrorCode } from '@keepsake/core';
import type { FastifyError, FastifyInstance } from 'fastify';

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

/** A request over the rate limit (thrown by @fastify/rate-limit, answered with 429). */
export class RateLimitedError extends Error {
  readonly statusCode = 429;
  readonly code = 'rate_limited';
  constructor(message: string) {
    super(message);
    this.name = 'RateLimitedError';
  }
}

export function httpStatusOf(error: KeepsakeError): number {
  return statusByCode[error.code] ?? 500;
}

export function errorBody(code: string, message: string, details?: unknown): ErrorBody {
  return { error: details === undefined ? { code, message } : { code, message, details } };
}

/**
 * One error handler for the whole app. Framework 4xx errors (bad JSON, body too large,
 * rate limit) keep their status with a clean body; anything unexpected is logged and
 * answered with a generic 500 that leaks no internals.
 */
export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError | KeepsakeError, request, reply) => {
    if (KeepsakeError.isInstance(error)) {
      const status = httpStatusOf(error);
      if (status >= 500) request.log.error({ err: error }, 'request failed');
      if (status === 503) reply.header('retry-after', '1');
      return reply.code(status).send(errorBody(error.code, error.message, issuesOf(error)));
    }
    const status = typeof error.statusCode === 'number' ? error.statusCode : 500;
    if (status >= 400 && status < 500) {
      return reply.code(status).send(errorBody(frameworkCode(error, status), error.message));
    }
    request.log.error({ err: error }, 'unexpected error');
    return reply.code(500).send(errorBody('internal_error', 'Internal server error'));
  });
  app.setNotFoundHandler((request, reply) => {
    reply
      .code(404)
      .send(errorBody('route_not_found', `No route for ${request.method} ${request.url}`));
  });
}

/** Input errors carry their zod issues as `details`, so a client can point at the field. */
function issuesOf(error: KeepsakeError): unknown {
  const cause = error.cause as { issues?: Array<{ path: PropertyKey[]; message: string }> };
  if (error.code !== 'invalid_input' || !Array.isArray(cause?.issues)) return undefined;
  return cause.issues.map((issue) => ({ path: issue.path.map(String), message: issue.message }));
}

function frameworkCode(error: FastifyError, status: number): string {
  if (status === 413) return 'body_too_large';
  if (status === 415) return 'unsupported_media_type';
  if (status === 429) return 'rate_limited';
  if (
    error.code === 'FST_ERR_CTP_INVALID_JSON_BODY' ||
    error.code === 'FST_ERR_CTP_EMPTY_JSON_BODY'
  )
    return 'invalid_json';
  return 'bad_request';
}
