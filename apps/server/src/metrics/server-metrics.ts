import type { SessionStore, StoreEvent } from '@keepsake/core';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

/** Latency buckets in seconds: from a page-cache write to a slow network fsync. */
const latencyBuckets = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

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

  constructor(runsInFlight: () => number) {
    const registers = [this.registry];
    this.saveDuration = new Histogram({
      name: 'keepsake_save_duration_seconds',
      help: 'Session saves, from call to durable (fsync) or written (no fsync).',
      labelNames: ['fsync', 'delta'],
      buckets: latencyBuckets,
      registers,
    });
    this.fsyncDuration = new Histogram({
      name: 'keepsake_fsync_duration_seconds',
      help: 'Writes that waited for durability: saves with fsync and durable journal appends.',
      labelNames: ['operation'],
      buckets: latencyBuckets,
      registers,
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
        if (event.fsync) this.fsyncDuration.observe({ operation: 'save' }, seconds);
        break;
      }
      case 'append': {
        const seconds = event.durationMs / 1000;
        this.appendDuration.observe({ durable: String(event.durable) }, seconds);
        if (event.durable) this.fsyncDuration.observe({ operation: 'append' }, seconds);
        break;
      }
      case 'conflict':
        this.conflicts.inc();
        break;
      case 'recovery':
        this.recoveries.inc({ outcome: event.outcome });
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
