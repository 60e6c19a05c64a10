import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { errorBody } from '../http/error-mapping.js';
import type { Namespace, NamespaceRegistry } from '../namespaces/namespace-registry.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by `authenticate` on every /api route that is not marked public. */
    namespace: Namespace | null;
  }
  interface FastifyContextConfig {
    /** Reachable without a token (server info for the sign-in screen). */
    public?: boolean;
  }
}

/**
 * The bearer token of a request, or null when there is none. The scheme name is
 * case-insensitive (RFC 7235 §2.1), so `bearer <token>` is accepted as well.
 */
export function bearerToken(request: FastifyRequest): string | null {
  const header = request.headers.authorization;
  if (typeof header !== 'string') return null;
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
  return match?.[1] ?? null;
}

/**
 * Resolves the request's namespace from its bearer token before anything else runs.
 * Unknown and missing tokens get the same 401, so a caller learns nothing about which
 * tokens or sessions exist.
 */
export function installAuthentication(scope: FastifyInstance, registry: NamespaceRegistry): void {
  scope.decorateRequest('namespace', null);
  scope.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    if (request.routeOptions.config.public === true) return;
    const namespace = registry.resolve(bearerToken(request));
    if (namespace === null) {
      reply.header('www-authenticate', 'Bearer realm="keepsake"');
      return reply
        .code(401)
        .send(errorBody('unauthorized', 'Send a valid token as "Authorization: Bearer <token>"'));
    }
    request.namespace = namespace;
  });
}

/** The authenticated namespace of a request (routes behind `installAuthentication`). */
export function namespaceOf(request: FastifyRequest): Namespace {
  if (request.namespace === null) {
    throw new TypeError('namespaceOf() used on a route without authentication');
  }
  return request.namespace;
}
