import type { SessionStore, StoreEvent } from '@keepsake/core';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

/** Latency buckets in seconds: from a page-cache write to a slow network fsync. */
const latencyBuckets = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

/** What a durable write waits for on each backend: the histogram's help says it. */
const DURABLE_WRITE_MEANING: Record<string, string> = {
  fs: 'write and fsync of the file (and its directory when created)',
  redis:
    "the command and the server's AOF fsync (WAITAOF) or replica acknowledgements, per the durability level",
  s3: 'the PUT until the object store acknowledged it',
  memory: 'in-process only (nothing is durable)',
};

export interface ServerMetricsOptions {
  /** The backend kind, a label of every series. */
  backend: string;
  /** This instance's id, a label of every series. */
  instance: string;
  runsInFlight: () => number;
  openStreams: () => number;
  /** Open streams following a run this instance does not stream. */
  remoteFollowers: () => number;
}

/**
 * Prometheus metrics of the server, fed by the store's event stream (`store.on`) so every
 * number comes from the component that measured it. One registry per server instance, so
 * several servers in one process (tests) never collide.
 */
export class ServerMetrics {
  readonly registry = new Registry();
  private readonly saveDuration: Histogram<'fsync' | 'delta'>;
  private readonly fsyncDuration: Histogram<'operation'>;
  private readonly appendDuration: Histogram<'durable'>;
  private readonly conflicts: Counter;
  private readonly conflictRetries: Counter<'operation'>;
  private readonly recoveries: Counter<'outcome'>;
  private readonly runs: Counter<'state'>;
  private readonly checkpoints: Counter;
  private readonly quarantined: Counter;
  private readonly warnings: Counter;
  private readonly httpRequests: Counter<'method' | 'route' | 'status'>;
  private readonly durableWrites: Histogram<'operation'>;
  private readonly takeovers: Counter;
  private readonly refusedLateAppends: Counter;
  private readonly backendErrors: Counter<'code'>;
  private readonly fsyncNamed: boolean;

  constructor(options: ServerMetricsOptions) {
    const { runsInFlight } = options;
    const registers = [this.registry];
    // Every series says which instance and which backend it is about, so one dashboard can
    // hold a fleet (and a fleet mid-migration from one backend to another).
    this.registry.setDefaultLabels({ backend: options.backend, instance: options.instance });
    this.fsyncNamed = options.backend === 'fs';
    this.durableWrites = new Histogram({
      name: 'keepsake_durable_write_duration_seconds',
      help: `Writes that waited for durability (saves with fsync, durable journal appends), until durable: ${DURABLE_WRITE_MEANING[options.backend]}.`,
      labelNames: ['operation'],
      buckets: latencyBuckets,
      registers,
    });
    this.takeovers = new Counter({
      name: 'keepsake_takeovers_total',
      help: 'Runs this instance ended on behalf of a dead or silent owner: their pending turn repaired with a marker (F1).',
      registers,
    });
    this.refusedLateAppends = new Counter({
      name: 'keepsake_late_appends_refused_total',
      help: "Appends of this instance's runs refused because another instance had taken the run over or cancelled it (E6, F1): output that was never acknowledged.",
      registers,
    });
    this.backendErrors = new Counter({
      name: 'keepsake_backend_errors_total',
      help: 'Requests answered with a backend error (unavailable 503, outcome unknown, backend failure), by error code.',
      labelNames: ['code'],
      registers,
    });
    new Gauge({
      name: 'keepsake_sse_streams_open',
      help: 'SSE streams this instance serves right now.',
      registers,
      collect() {
        this.set(options.openStreams());
      },
    });
    new Gauge({
      name: 'keepsake_sse_streams_remote',
      help: 'Of the open SSE streams, those following a run another instance streams (read by polling its journal).',
      registers,
      collect() {
        this.set(options.remoteFollowers());
      },
    });
    this.saveDuration = new Histogram({
      name: 'keepsake_save_duration_seconds',
      help: 'Session saves, from call to durable (fsync) or written (no fsync).',
      labelNames: ['fsync', 'delta'],
      buckets: latencyBuckets,
      registers,
    });
    // The fs name of the durable-write histogram, kept for dashboards built on it; other
    // backends do not fsync, so they do not export it.
    this.fsyncDuration = new Histogram({
      name: 'keepsake_fsync_duration_seconds',
      help: 'fs only (same as keepsake_durable_write_duration_seconds): saves with fsync and durable journal appends.',
      labelNames: ['operation'],
      buckets: latencyBuckets,
      registers: this.fsyncNamed ? registers : [],
    });
    this.appendDuration = new Histogram({
      name: 'keepsake_journal_append_duration_seconds',
      help: 'Run journal appends, until as durable as the journal policy requires.',
      labelNames: ['durable'],
      buckets: latencyBuckets,
      registers,
    });
    this.conflicts = new Counter({
      name: 'keepsake_revision_conflicts_total',
      help: 'Saves refused because another writer saved the session first (B4).',
      registers,
    });
    this.conflictRetries = new Counter({
      name: 'keepsake_conflict_retries_total',
      help: 'Server operations retried after a revision conflict.',
      labelNames: ['operation'],
      registers,
    });
    this.recoveries = new Counter({
      name: 'keepsake_recoveries_total',
      help: 'Crash recoveries of pending turns on load (F1/F2), by outcome.',
      labelNames: ['outcome'],
      registers,
    });
    this.runs = new Counter({
      name: 'keepsake_runs_total',
      help: 'Run state transitions: started and each terminal state.',
      labelNames: ['state'],
      registers,
    });
    this.checkpoints = new Counter({
      name: 'keepsake_checkpoints_total',
      help: 'Periodic checkpoints of live runs (E4).',
      registers,
    });
    this.quarantined = new Counter({
      name: 'keepsake_quarantined_documents_total',
      help: 'Stored documents moved aside because they did not parse (A2).',
      registers,
    });
    this.warnings = new Counter({
      name: 'keepsake_document_warnings_total',
      help: 'Invalid non-essential fields reset on load (A5).',
      registers,
    });
    this.httpRequests = new Counter({
      name: 'keepsake_http_requests_total',
      help: 'HTTP requests by route pattern and status.',
      labelNames: ['method', 'route', 'status'],
      registers,
    });
    new Gauge({
      name: 'keepsake_runs_in_flight',
      help: 'Runs this process is streaming right now.',
      registers,
      collect() {
        this.set(runsInFlight());
      },
    });
    collectDefaultMetrics({ register: this.registry });
  }

  /** Subscribes to a store's events; returns the unsubscribe function. */
  observe(store: SessionStore): () => void {
    return store.on((event) => this.record(event));
  }

  recordConflictRetry(operation: string): void {
    this.conflictRetries.inc({ operation });
  }

  recordRefusedLateAppend(): void {
    this.refusedLateAppends.inc();
  }

  recordBackendError(code: string): void {
    this.backendErrors.inc({ code });
  }

  private observeDurable(operation: 'save' | 'append', seconds: number): void {
    this.durableWrites.observe({ operation }, seconds);
    if (this.fsyncNamed) this.fsyncDuration.observe({ operation }, seconds);
  }

  recordHttpRequest(method: string, route: string, status: number): void {
    this.httpRequests.inc({ method, route, status: String(status) });
  }

  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  private record(event: StoreEvent): void {
    switch (event.type) {
      case 'save': {
        const seconds = event.durationMs / 1000;
        this.saveDuration.observe(
          { fsync: String(event.fsync), delta: String(event.delta) },
          seconds,
        );
        if (event.fsync) this.observeDurable('save', seconds);
        break;
      }
      case 'append': {
        const seconds = event.durationMs / 1000;
        this.appendDuration.observe({ durable: String(event.durable) }, seconds);
        if (event.durable) this.observeDurable('append', seconds);
        break;
      }
      case 'conflict':
        this.conflicts.inc();
        break;
      case 'recovery':
        this.recoveries.inc({ outcome: event.outcome });
        if (event.runId !== null) this.takeovers.inc();
        break;
      case 'run':
        this.runs.inc({ state: event.state });
        break;
      case 'checkpoint':
        this.checkpoints.inc();
        break;
      case 'quarantine':
        this.quarantined.inc();
        break;
      case 'warning':
        this.warnings.inc();
        break;
    }
  }
}
