import type { FastifyInstance } from 'fastify';
import type { BackendReadiness } from '../health/backend-readiness.js';
import type { ServerMetrics } from '../metrics/server-metrics.js';

export interface HealthRouteDependencies {
  metrics: ServerMetrics;
  /** False once shutdown began: load balancers stop sending new traffic. */
  isReady: () => boolean;
  /** Whether the backend answers (bounded and cached). */
  readiness: BackendReadiness;
  /** The backend kind, named in readiness answers. */
  backend: string;
}

/**
 * Liveness, readiness and Prometheus metrics. No token: probes and scrapers have none.
 * `/healthz` is liveness only (the process answers HTTP): restarting an instance does not
 * bring a backend back. `/readyz` is 503 while shutting down or while the backend does not
 * answer, so an instance whose every API call would fail leaves the rotation.
 */
export function registerHealthRoutes(app: FastifyInstance, dependencies: HealthRouteDependencies) {
  app.get('/healthz', async () => ({ status: 'ok' }));

  app.get('/readyz', async (_request, reply) => {
    if (!dependencies.isReady()) {
      return reply.code(503).send({ status: 'shutting-down' });
    }
    const backend = await dependencies.readiness.check();
    if (!backend.ready) {
      return reply.code(503).send({
        status: 'backend-unavailable',
        backend: dependencies.backend,
        reason: backend.reason,
        message: backend.message,
      });
    }
    return { status: 'ready', backend: dependencies.backend };
  });

  app.get('/metrics', async (_request, reply) => {
    const { contentType, body } = await dependencies.metrics.render();
    return reply.type(contentType).send(body);
  });
}
