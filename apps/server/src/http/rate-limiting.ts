import { fastifyRateLimit } from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { bearerToken } from '../auth/authenticate.js';
import type { NamespaceRegistry } from '../namespaces/namespace-registry.js';
import { RateLimitedError } from './client-errors.js';

export interface RateLimitOptions {
  max: number;
  windowMs: number;
}

/**
 * Rate limits every request of `scope` before authentication runs. A request with a valid
 * token counts against that token, so one noisy client cannot starve others behind the
 * same address; anything else (no token, a wrong one, open mode) counts against its
 * address, so guessing tokens or hammering without one is limited too.
 *
 * Call it before `installAuthentication`: hooks of one scope run in the order they were
 * added, and the plugin's own per-route hooks would run after the 401.
 */
export async function installRateLimiting(
  scope: FastifyInstance,
  registry: NamespaceRegistry,
  options: RateLimitOptions,
): Promise<void> {
  await scope.register(fastifyRateLimit, {
    global: false,
    max: options.max,
    timeWindow: options.windowMs,
    keyGenerator: (request) => rateLimitKey(request, registry),
    // The plugin throws what this returns; the app's error handler formats it.
    errorResponseBuilder: (_request, context) =>
      new RateLimitedError(
        `Rate limit of ${context.max} requests per ${context.after} exceeded; retry later`,
      ),
  });
  scope.addHook('onRequest', scope.rateLimit());
}

function rateLimitKey(request: FastifyRequest, registry: NamespaceRegistry): string {
  const token = registry.openMode ? null : bearerToken(request);
  if (token !== null && registry.resolve(token) !== null) return `token:${token}`;
  return `address:${request.ip}`;
}
