import type { FastifyInstance } from 'fastify';
import type { ServerMetrics } from '../metrics/server-metrics.js';

export interface HealthRouteDependencies {
  metrics: ServerMetrics;
  /** False once shutdown began: load balancers stop sending new traffic. */
  isReady: () => boolean;
}

/** Liveness, readiness and Prometheus metrics. No token: probes and scrapers have none. */
export function registerHealthRoutes(app: FastifyInstance, dependencies: HealthRouteDependencies) {
  app.get('/healthz', async () => ({ status: 'ok' }));

  app.get('/readyz', async (_request, reply) => {
    if (!dependencies.isReady()) {
      return reply.code(503).send({ status: 'shutting-down' });
    }
    return { status: 'ready' };
  });

  app.get('/metrics', async (_request, reply) => {
    const { contentType, body } = await dependencies.metrics.render();
    return reply.type(contentType).send(body);
  });
}
