import type { FastifyInstance } from 'fastify';
import { namespaceOf } from '../auth/authenticate.js';
import type { DemoMemoryProvider } from '../memory/demo-memory-provider.js';

/** What the demo memory provider extracted for this namespace, newest first. */
export function registerMemoryRoutes(scope: FastifyInstance, provider: DemoMemoryProvider): void {
  scope.get('/memory', async (request) => {
    const namespace = namespaceOf(request);
    return { records: provider.records(namespace.name) };
  });
}
