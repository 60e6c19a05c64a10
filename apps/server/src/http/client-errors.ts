/**
 * A request the HTTP layer refuses before any store call: not JSON, a prototype key, an
 * unacceptable `Accept`, a malformed URL, too many requests. Store errors are core's typed
 * errors (see error-mapping.ts); these are the HTTP layer's own, with the status and the
 * stable `code` of the one error shape every reply uses.
 */
export class ClientRequestError extends Error {
  constructor(
    readonly statusCode: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'ClientRequestError';
  }
}

/** A request over the rate limit (thrown by @fastify/rate-limit, answered with 429). */
export class RateLimitedError extends ClientRequestError {
  constructor(message: string) {
    super(429, 'rate_limited', message);
    this.name = 'RateLimitedError';
  }
}

/** The longest piece of a request (a path, a key) quoted back in an error message. */
const QUOTE_LIMIT = 120;

/** Quotes client input in a message without echoing kilobytes of it back. */
export function quoteInput(text: string): string {
  const shown = text.length > QUOTE_LIMIT ? `${text.slice(0, QUOTE_LIMIT)}…` : text;
  return JSON.stringify(shown);
}
