import { createHash } from 'node:crypto';
import {
  type CloseReport,
  createSessionStore,
  type SessionStore,
  type StorageAdapter,
} from '@keepsake/core';
import type { FastifyBaseLogger } from 'fastify';
import type { Agent } from '../agents/agent.js';
import { createBackendAdapter } from '../backends/backend-factory.js';
import type { ServerConfig } from '../config/config-schema.js';
import type { DemoMemoryProvider } from '../memory/demo-memory-provider.js';
import type { ServerMetrics } from '../metrics/server-metrics.js';
import { RunExecutor } from '../runs/run-executor.js';

/** The namespace every request uses in open mode (no tokens configured). */
export const OPEN_NAMESPACE = 'default';

/** Everything one token namespace owns: its own store over its own storage root. */
export interface Namespace {
  readonly name: string;
  readonly store: SessionStore;
  /** The store's adapter, for the readiness probe's one cheap read. */
  readonly adapter: StorageAdapter;
  readonly runs: RunExecutor;
  /** The session this namespace last sent a message to: the boundary for memory commits. */
  lastActiveSessionId: string | null;
}

export interface NamespaceRegistryOptions {
  config: ServerConfig;
  agent: Agent;
  memory: DemoMemoryProvider;
  metrics: ServerMetrics;
  logger: FastifyBaseLogger;
}

/**
 * Maps bearer tokens to namespaces. One store per namespace, each over its own adapter root,
 * so a request authenticated as one token cannot even name another token's data: isolation
 * holds by construction rather than by a check every route must remember.
 */
export class NamespaceRegistry {
  readonly openMode: boolean;
  private readonly byTokenDigest = new Map<string, Namespace>();
  private readonly namespaces = new Map<string, Namespace>();

  private constructor(openMode: boolean) {
    this.openMode = openMode;
  }

  static async open(options: NamespaceRegistryOptions): Promise<NamespaceRegistry> {
    const { config } = options;
    const tokens = config.auth.tokens;
    const registry = new NamespaceRegistry(tokens.length === 0);
    const names = tokens.length === 0 ? [OPEN_NAMESPACE] : tokens.map((entry) => entry.namespace);
    try {
      for (const name of new Set(names)) {
        registry.namespaces.set(name, await openNamespace(name, options));
      }
    } catch (error) {
      await registry.close();
      throw error;
    }
    for (const entry of tokens) {
      registry.byTokenDigest.set(digest(entry.token), registry.namespaces.get(entry.namespace)!);
    }
    return registry;
  }

  /** The namespace of a bearer token, or null. Open mode ignores the token. */
  resolve(token: string | null): Namespace | null {
    if (this.openMode) return this.namespaces.get(OPEN_NAMESPACE)!;
    if (token === null) return null;
    // Looking up a digest keeps the comparison independent of how much of a guess matches.
    return this.byTokenDigest.get(digest(token)) ?? null;
  }

  all(): Namespace[] {
    return [...this.namespaces.values()];
  }

  get runsInFlight(): number {
    let total = 0;
    for (const namespace of this.namespaces.values()) total += namespace.runs.inFlight;
    return total;
  }

  /** C2: closes every store (drain lifecycle, flushAll, close the backend). */
  async close(): Promise<Map<string, CloseReport | Error>> {
    const reports = new Map<string, CloseReport | Error>();
    await Promise.all(
      this.all().map(async (namespace) => {
        namespace.runs.close();
        try {
          reports.set(namespace.name, await namespace.store.close());
        } catch (error) {
          reports.set(namespace.name, error as Error);
        }
      }),
    );
    return reports;
  }
}

async function openNamespace(name: string, options: NamespaceRegistryOptions): Promise<Namespace> {
  const { config, agent, memory, metrics, logger } = options;
  const adapter = createBackendAdapter(config.backend, name);
  const store = createSessionStore({
    adapter,
    journal: { durability: config.store.journalDurability },
    recovery: { graceMs: config.store.recoveryGraceMs },
    checkpoint: { intervalMs: config.store.checkpointIntervalMs },
    runs: { followPollMs: config.streaming.pollIntervalMs },
    // Shutdown gives the stores the last quarter of its deadline (see shutdown.ts).
    lifecycle: { drainDeadlineMs: Math.max(1, Math.floor(config.server.shutdownDeadlineMs / 8)) },
  });
  // A backend that cannot be opened (a Redis that is down or misconfigured, a directory
  // without permission) is reported when the server starts, not at its first request.
  await store.list({ limit: 1 });
  metrics.observe(store);
  const runs = new RunExecutor({
    namespace: name,
    store,
    agent,
    memory,
    logger: logger.child({ namespace: name }),
    onConflictRetry: (operation) => metrics.recordConflictRetry(operation),
    onLateAppendRefused: () => metrics.recordRefusedLateAppend(),
  });
  return { name, store, adapter, runs, lastActiveSessionId: null };
}

function digest(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}
