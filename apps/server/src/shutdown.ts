import type { FastifyInstance } from 'fastify';
import type { ConnectionTracker } from './http/connection-tracker.js';
import type { MemoryBoundary } from './memory/memory-boundary.js';
import type { NamespaceRegistry } from './namespaces/namespace-registry.js';
import type { StreamRegistry } from './runs/stream-registry.js';

export interface ShutdownOptions {
  app: FastifyInstance;
  namespaces: NamespaceRegistry;
  streams: StreamRegistry;
  connections: ConnectionTracker;
  memoryBoundary: MemoryBoundary;
  deadlineMs: number;
  stopAcceptingRuns: () => void;
}

export interface ShutdownReport {
  /** True when some step was still running at the deadline (the process should exit non-zero). */
  timedOut: boolean;
  durationMs: number;
  /** HTTP connections still open at the HTTP deadline, closed without waiting. */
  connectionsForced: number;
  /** Runs that finished during the grace period. */
  runsFinished: number;
  /** Runs stopped at the grace deadline; their pending turns are recovered on the next load. */
  runsStopped: number;
  /** Per namespace: sessions flushed, flush failures, memory commits abandoned. */
  stores: Record<
    string,
    { flushed: number; failed: number; abandoned: number } | { error: string }
  >;
}

/**
 * SIGTERM, in order:
 * 1. stop accepting: readiness turns 503, new runs are refused, the listener closes;
 * 2. runs get half the deadline to finish, then their agents are stopped (each stopped run
 *    keeps its pending turn and journal: the checkpoint that recovery resumes from);
 * 3. SSE streams still open are ended (clients resume elsewhere with Last-Event-ID), and
 *    connections are closed as soon as they are idle;
 * 4. every store closes (C2): lifecycle drain, flushAll with fsync, backend closed. It gets
 *    at least the last quarter of the deadline; the lifecycle drain is bounded inside it.
 */
export async function shutdownServer(options: ShutdownOptions): Promise<ShutdownReport> {
  const startedAt = Date.now();
  const deadline = startedAt + options.deadlineMs;
  options.stopAcceptingRuns();
  const appClosed = options.app.close();

  const runDeadline = startedAt + Math.floor(options.deadlineMs / 2);
  const drained = await Promise.all(
    options.namespaces.all().map((namespace) => namespace.runs.drain(runDeadline)),
  );
  options.streams.closeAll();

  let timedOut = false;
  const withinDeadline = async <T>(promise: Promise<T>, until: number): Promise<T | undefined> => {
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<undefined>((resolve) => {
      timer = setTimeout(
        () => {
          timedOut = true;
          resolve(undefined);
        },
        Math.max(0, until - Date.now()),
      );
    });
    try {
      return await Promise.race([promise, expired]);
    } finally {
      clearTimeout(timer);
    }
  };

  // Keep-alive sockets that went idle after close() began (an ended SSE stream, a finished
  // request, a client's spare connection that never sent one) would hold close() until
  // their keep-alive timeout: close them as soon as they are idle.
  const server = options.app.server;
  const reaper = setInterval(() => options.connections.closeIdle(), 25);
  options.connections.closeIdle();
  // The stores' close (flushAll above all) gets the last quarter of the deadline, whatever
  // the HTTP side does: a client that will not let go is disconnected, not waited for.
  const storeDeadline = startedAt + Math.floor((options.deadlineMs * 3) / 4);
  const httpClosed = await withinDeadline(
    appClosed.then(() => true),
    storeDeadline,
  );
  clearInterval(reaper);
  let connectionsForced = 0;
  if (httpClosed === undefined) {
    connectionsForced = await new Promise<number>((resolve) =>
      server.getConnections((_error, count) => resolve(count)),
    );
    server.closeAllConnections();
  }
  await withinDeadline(options.memoryBoundary.settle(), storeDeadline);
  const reports = await withinDeadline(options.namespaces.close(), deadline);

  const stores: ShutdownReport['stores'] = {};
  for (const [name, report] of reports ?? []) {
    stores[name] =
      report instanceof Error
        ? { error: report.message }
        : {
            flushed: report.flush.flushed,
            failed: report.flush.failed.length,
            abandoned: report.lifecycle.abandoned.length,
          };
  }
  return {
    timedOut,
    durationMs: Date.now() - startedAt,
    connectionsForced,
    runsFinished: drained.reduce((sum, result) => sum + result.finished, 0),
    runsStopped: drained.reduce((sum, result) => sum + result.stopped, 0),
    stores,
  };
}
