import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fastifySSE } from '@fastify/sse';
import { fastifyStatic } from '@fastify/static';
import { StoreClosedError } from '@keepsake/core';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Agent } from './agents/agent.js';
import { createAgent } from './agents/create-agent.js';
import { installAuthentication } from './auth/authenticate.js';
import type { ServerConfig } from './config/config-schema.js';
import { BackendReadiness } from './health/backend-readiness.js';
import { ConnectionTracker } from './http/connection-tracker.js';
import { answerFrameworkError, installErrorHandling } from './http/error-mapping.js';
import { installJsonBodyParser } from './http/json-body.js';
import { installRateLimiting } from './http/rate-limiting.js';
import { DemoMemoryProvider } from './memory/demo-memory-provider.js';
import { MemoryBoundary } from './memory/memory-boundary.js';
import { ServerMetrics } from './metrics/server-metrics.js';
import { NamespaceRegistry } from './namespaces/namespace-registry.js';
import { registerHealthRoutes } from './routes/health-routes.js';
import { registerMemoryRoutes } from './routes/memory-routes.js';
import { registerRunRoutes } from './routes/run-routes.js';
import { registerSessionRoutes } from './routes/session-routes.js';
import { StreamRegistry } from './runs/stream-registry.js';
import { type ShutdownReport, shutdownServer } from './shutdown.js';
import { explainOpenFailure } from './startup/explain-open-failure.js';
import { checkRedisBeforeOpening } from './startup/redis-preflight.js';

export interface CreateServerOptions {
  /** Replaces the agent built from `config.agent` (tests with a custom agent). */
  agent?: Agent;
  /** Log to stdout as JSON lines. @default true, at `config.server.logLevel` */
  logger?: boolean;
}

export interface KeepsakeServer {
  readonly app: FastifyInstance;
  readonly config: ServerConfig;
  readonly namespaces: NamespaceRegistry;
  readonly metrics: ServerMetrics;
  readonly agent: Agent;
  /** Memory commits started at session boundaries (`settle()` awaits them). */
  readonly memoryBoundary: MemoryBoundary;
  /** Starts listening; resolves with the URL (`http://host:port`). */
  listen(): Promise<string>;
  /** Graceful shutdown within `config.server.shutdownDeadlineMs` (C2). Idempotent. */
  close(): Promise<ShutdownReport>;
}

/** How long the Redis check before opening waits for an answer: a misconfiguration exits quickly. */
const STARTUP_CHECK_TIMEOUT_MS = 3_000;

/** Longer than any request line Node accepts (its default header limit is 16 KiB). */
const MAX_PARAM_LENGTH = 64 * 1024;

const publicDirectory = fileURLToPath(new URL('../public/', import.meta.url));
const eventSourceParserDirectory = join(
  dirname(createRequire(import.meta.url).resolve('eventsource-parser/package.json')),
  'dist',
);

/** Builds the whole server: stores per namespace, agent, routes, web demo. */
export async function createServer(
  config: ServerConfig,
  options: CreateServerOptions = {},
): Promise<KeepsakeServer> {
  const app = Fastify({
    // Every log line names the instance, as the metrics and run lookups do.
    logger:
      options.logger === false
        ? false
        : { level: config.server.logLevel, base: { instance: config.server.instanceId } },
    bodyLimit: config.server.bodyLimitBytes,
    // Longer than any URL Node accepts (16 KiB of headers), so an over-long id always
    // reaches validation and gets the same 400 on every method.
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    // A malformed URL is answered in the server's error shape, not Fastify's.
    frameworkErrors: answerFrameworkError,
    // SSE streams are long-lived: shutdown ends them itself, then closes idle keep-alives.
    forceCloseConnections: 'idle',
    return503OnClosing: true,
  });
  const agent = options.agent ?? createAgent(config.agent);
  const memory = new DemoMemoryProvider();
  let namespaces: NamespaceRegistry | null = null;
  const streams = new StreamRegistry();
  const metrics = new ServerMetrics({
    backend: config.backend.kind,
    instance: config.server.instanceId,
    runsInFlight: () => namespaces?.runsInFlight ?? 0,
    openStreams: () => streams.size,
    remoteFollowers: () => streams.remoteCount,
  });
  if (config.backend.kind === 'redis') {
    await checkRedisBeforeOpening(config.backend, STARTUP_CHECK_TIMEOUT_MS);
  }
  try {
    namespaces = await NamespaceRegistry.open({ config, agent, memory, metrics, logger: app.log });
  } catch (error) {
    throw explainOpenFailure(error, config.backend) ?? error;
  }
  const registry = namespaces;
  const memoryBoundary = new MemoryBoundary(memory, app.log);
  const state = { acceptingRuns: true };
  const onConflictRetry = (operation: string) => metrics.recordConflictRetry(operation);

  const connections = new ConnectionTracker(app.server);
  installErrorHandling(app, {
    bodyLimitBytes: config.server.bodyLimitBytes,
    onBackendError: (code) => metrics.recordBackendError(code),
  });
  app.addHook('onResponse', async (request, reply) => {
    metrics.recordHttpRequest(
      request.method,
      request.routeOptions.url ?? 'unmatched',
      reply.statusCode,
    );
  });
  await app.register(fastifySSE, { heartbeatInterval: config.streaming.heartbeatMs });
  // One cheap read per namespace's storage root: a stat on fs, an EXISTS on Redis, a HEAD on S3.
  const readiness = new BackendReadiness({
    probe: async () => {
      await Promise.all(
        registry.all().map((namespace) => namespace.adapter.hasDocument('sessions', 'readyz')),
      );
    },
    cacheMs: config.server.readinessCacheMs,
    timeoutMs: config.server.readinessTimeoutMs,
  });
  registerHealthRoutes(app, {
    metrics,
    isReady: () => state.acceptingRuns,
    readiness,
    backend: config.backend.kind,
  });
  await app.register(fastifyStatic, { root: publicDirectory, prefix: '/' });
  // The demo parses SSE in the browser with the same maintained parser the OpenAI agent uses.
  await app.register(fastifyStatic, {
    root: eventSourceParserDirectory,
    prefix: '/vendor/eventsource-parser/',
    decorateReply: false,
  });

  await app.register(
    async (api) => {
      // Before authentication: requests without a valid token are limited too (by address).
      await installRateLimiting(api, registry, config.server.rateLimit);
      installAuthentication(api, registry);
      installJsonBodyParser(api);
      api.get('/info', { config: { public: true } }, async () => ({
        auth: registry.openMode ? 'open' : 'token',
        agent: agent.name,
        backend: config.backend.kind,
      }));
      api.get('/me', async (request) => ({ namespace: request.namespace?.name ?? null }));
      registerSessionRoutes(api, { memoryBoundary, onConflictRetry });
      registerRunRoutes(api, {
        maxMessageChars: config.server.maxMessageChars,
        streams,
        assertAcceptingRuns: () => {
          if (!state.acceptingRuns) throw new StoreClosedError('start a run');
        },
        onConflictRetry,
        instanceId: config.server.instanceId,
      });
      registerMemoryRoutes(api, memory);
    },
    { prefix: '/api' },
  );

  let closing: Promise<ShutdownReport> | null = null;
  return {
    app,
    config,
    namespaces: registry,
    metrics,
    agent,
    memoryBoundary,
    async listen() {
      await app.listen({ port: config.server.port, host: config.server.host });
      const address = app.server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      const host = config.server.host.includes(':')
        ? `[${config.server.host}]`
        : config.server.host;
      return `http://${host}:${port}`;
    },
    close() {
      closing ??= shutdownServer({
        app,
        namespaces: registry,
        streams,
        connections,
        memoryBoundary,
        deadlineMs: config.server.shutdownDeadlineMs,
        stopAcceptingRuns: () => {
          state.acceptingRuns = false;
        },
      });
      return closing;
    },
  };
}
