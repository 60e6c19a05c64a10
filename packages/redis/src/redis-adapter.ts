import {
  type AdapterCapabilities,
  type AdapterLiveness,
  type AppendLogResult,
  BackendError,
  type Collection,
  type DeleteOptions,
  type DocumentWrite,
  type IdPage,
  type IndexPage,
  type ListDocumentsOptions,
  type LogDurability,
  type LogReadResult,
  type LogRecordInput,
  type PutResult,
  type QuarantinedDocument,
  type SessionSummary,
  type StorageAdapterV1,
  type StoredDocument,
  type WriteOptions,
} from '@keepsake/core';
import type { Redis } from 'ioredis';
import { createClients, masters, type RedisClient, untilReady } from './connection.js';
import { DocumentStore } from './document-store.js';
import { type ConfirmMethod, planDurability } from './durability-plan.js';
import { probeServer } from './durability-probe.js';
import { ADAPTER_NAME, RedisDurabilityError, toKeepsakeError } from './errors.js';
import { IndexStore } from './index-store.js';
import { JournalStore } from './journal-store.js';
import { KeyLayout } from './keys.js';
import {
  type RedisAdapterOptions,
  type RedisDurability,
  type ResolvedRedisAdapterOptions,
  resolveOptions,
} from './options.js';
import { RedisOwnerLiveness } from './owner-liveness.js';
import { PrimaryCheck } from './primary-check.js';
import { QuarantineStore } from './quarantine-store.js';
import { refuseWrites } from './read-only.js';
import { ScriptRunner } from './script-runner.js';
import {
  deleteDocumentScript,
  quarantineDocumentScript,
  writeDocumentScript,
} from './scripts/document-scripts.js';
import {
  listIndexScript,
  putIndexEntriesIfWrittenScript,
  putIndexEntryScript,
  startIndexScript,
} from './scripts/index-scripts.js';
import {
  appendJournalScript,
  deleteJournalsScript,
  listJournalsScript,
  readJournalScript,
} from './scripts/journal-scripts.js';
import {
  commandRunner,
  type Lane,
  laneChooser,
  type StorageContext,
  writeTokens,
} from './storage-context.js';

const SCRIPTS = [
  writeDocumentScript,
  deleteDocumentScript,
  quarantineDocumentScript,
  putIndexEntriesIfWrittenScript,
  putIndexEntryScript,
  startIndexScript,
  listIndexScript,
  appendJournalScript,
  readJournalScript,
  listJournalsScript,
  deleteJournalsScript,
];

const DURABILITY_CAPABILITY = {
  none: 'acknowledged',
  aof: 'server-fsync',
  replicas: 'replicated',
} as const;

/** The capabilities of an adapter configured with `durability` (H1). */
export function redisCapabilities(durability: RedisDurability): AdapterCapabilities {
  return {
    durability: DURABILITY_CAPABILITY[durability],
    conditionalWrites: true,
    sharedAcrossProcesses: true,
    appendDeltas: true,
    nativeAppend: true,
    // With the AOF fsynced per event-loop turn (or WAIT per write batch), every durable
    // write the server handles in one turn shares one fsync.
    groupCommit: true,
    clusterSafeKeys: true,
    indexWithDocument: true,
    gaps:
      durability === 'none'
        ? [
            {
              clause: 'B3',
              reason:
                "durability 'none': a durable write is acknowledged from the Redis server's memory; a server restart without persistence loses it (configure AOF and durability 'aof')",
            },
          ]
        : [],
  };
}

/** What `open()` found: how durable writes are confirmed, and the masters it asked. */
export interface RedisDurabilityReport {
  readonly level: RedisDurability;
  readonly method: ConfirmMethod;
  readonly servers: readonly string[];
  /**
   * What the configuration leaves open, also emitted as a process warning (code
   * `KEEPSAKE_REDIS_AOF_NOT_REPLICATED`): with durability `aof` on a server that has
   * replicas, an acknowledgement does not wait for them, so a failover can lose it.
   */
  readonly warnings: readonly string[];
}

/** The code of the process warning `open()` emits for `aof` on a replicated deployment. */
export const AOF_NOT_REPLICATED_WARNING = 'KEEPSAKE_REDIS_AOF_NOT_REPLICATED';

/**
 * The Redis adapter. `open()` connects (a client passed in is used as it is), probes every
 * master for the configured durability and fails with `RedisDurabilityError` when it
 * cannot be confirmed, so a misconfigured server is reported at startup.
 */
export class RedisAdapter implements StorageAdapterV1 {
  readonly specificationVersion = 'v1' as const;
  readonly name = ADAPTER_NAME;
  readonly capabilities: AdapterCapabilities;
  readonly keys: KeyLayout;
  /** The first connection (the one namespace-wide commands use), or the Cluster client. */
  readonly client: RedisClient;
  /** Every connection: `connections` of them to a standalone `url`, else `client` alone. */
  readonly clients: readonly RedisClient[];
  private readonly owned: boolean;
  private readonly lanes: readonly Lane[];
  private readonly documents: DocumentStore;
  private readonly index: IndexStore;
  private readonly journals: JournalStore;
  private readonly quarantine: QuarantineStore;
  private opening: Promise<RedisDurabilityReport> | null = null;
  /** Set once `open()` succeeded: the primitives then skip waiting for it (a save's hot path). */
  private opened = false;
  private closing: Promise<void> | null = null;

  private readonly options: ResolvedRedisAdapterOptions;
  /** Through Sentinel: re-probes a primary a connection reached after a failover. */
  private readonly primaryCheck: PrimaryCheck | null;
  /**
   * F1, E9: who began a run and whether it is alive, from the server's client list. Only on
   * connections the adapter makes (a client passed in keeps its own name).
   */
  readonly liveness?: AdapterLiveness;

  constructor(options: ResolvedRedisAdapterOptions) {
    this.options = options;
    this.capabilities = redisCapabilities(options.durability);
    this.keys = new KeyLayout(options.keyPrefix);
    const liveness =
      options.connection.kind !== 'client' && options.livenessConfirmMs > 0
        ? new RedisOwnerLiveness(() => this.client, options.livenessConfirmMs)
        : null;
    if (liveness !== null) this.liveness = liveness;
    const { clients, owned } = createClients(options, liveness?.ownerId ?? null);
    const client = clients[0]!;
    this.client = client;
    this.clients = clients;
    this.owned = owned;
    this.primaryCheck =
      options.durability !== 'none' && followsFailovers(options, client)
        ? new PrimaryCheck(options.durability, options.replicas)
        : null;
    // A Cluster client's offline queue holds commands while the cluster is unreachable, for
    // as long as it is: each call gets a deadline instead (see deadline.ts).
    const deadlineMs = client.isCluster ? options.socketTimeoutMs : null;
    this.lanes = clients.map((laneClient) => ({
      client: laneClient,
      scripts: new ScriptRunner(laneClient, SCRIPTS, deadlineMs),
    }));
    const context: StorageContext = {
      main: this.lanes[0]!,
      lane: laneChooser(this.lanes),
      keys: this.keys,
      standalone: !client.isCluster,
      nextWriteToken: writeTokens(),
      command: commandRunner(deadlineMs),
    };
    this.documents = new DocumentStore(context);
    this.index = new IndexStore(context);
    this.journals = new JournalStore(context);
    this.quarantine = new QuarantineStore(context);
  }

  /** Connects and probes the durability; idempotent. A failed attempt can be retried. */
  async open(): Promise<void> {
    await this.durabilityReport();
  }

  /** What `open()` found (opening the adapter if it is not open yet). */
  durabilityReport(): Promise<RedisDurabilityReport> {
    this.assertNotClosed('open');
    this.opening ??= this.connectAndProbe().then(
      (report) => {
        this.opened = true;
        return report;
      },
      (error: unknown) => {
        this.opening = null;
        throw error;
      },
    );
    return this.opening;
  }

  /** Resolves once the client is connected again (after a restart of the server, say). */
  async whenConnected(timeoutMs = this.options.connectTimeoutMs): Promise<void> {
    await Promise.all(this.clients.map((client) => untilReady(client, timeoutMs)));
  }

  private async connectAndProbe(): Promise<RedisDurabilityReport> {
    const { durability, replicas, durabilityTimeoutMs, connectTimeoutMs } = this.options;
    await Promise.all(this.clients.map((client) => untilReady(client, connectTimeoutMs)));
    // Every connection of a standalone adapter reaches the same server: asked once. Through
    // Sentinel each connection asked for the primary itself (a failover may be under way).
    const nodes = this.primaryCheck === null ? masters(this.client) : (this.clients as Redis[]);
    const sockets = PrimaryCheck.sockets(this.clients);
    let facts: Awaited<ReturnType<typeof probeServer>>[];
    try {
      facts = durability === 'none' ? [] : await Promise.all(nodes.map(probeServer));
    } catch (error) {
      throw toKeepsakeError(error, 'probe the server for its durability settings');
    }
    const plan = planDurability(durability, replicas, facts);
    if (!plan.ok) {
      throw new RedisDurabilityError(durability, plan.server, `open: ${plan.reason}`);
    }
    for (const lane of this.lanes) {
      lane.scripts.durability = {
        method: plan.method,
        replicas,
        timeoutMs: durabilityTimeoutMs,
        level: durability,
      };
    }
    this.primaryCheck?.confirmed(sockets);
    const warnings: string[] = [];
    const replicated =
      facts.some((fact) => (fact.connectedReplicas ?? 0) > 0) ||
      this.options.connection.kind === 'sentinel';
    if (durability === 'aof' && replicated) {
      warnings.push(
        "redis adapter: durability 'aof' on a server with replicas: a durable write is acknowledged once the primary's AOF is fsynced, without waiting for a replica, so a failover that promotes a replica can lose acknowledged writes; use durability: 'replicas' to have them wait (see the README, Durability)",
      );
    }
    for (const warning of warnings) {
      process.emitWarning(warning, { code: AOF_NOT_REPLICATED_WARNING });
    }
    // Read-only: a namespace without an index is left without one (a listing rebuilds it).
    if (!this.options.readOnly) await this.index.start();
    return {
      level: durability,
      method: plan.method,
      servers: [...new Set(facts.map((fact) => fact.server))],
      warnings,
    };
  }

  private assertNotClosed(operation: string): void {
    if (this.closing !== null) throw new BackendError(this.name, `${operation} (adapter closed)`);
  }

  /** Every primitive first makes sure the adapter is open (core opens it first anyway). */
  private async ready(operation: string): Promise<void> {
    this.assertNotClosed(operation);
    await (this.opening ?? this.durabilityReport());
  }

  /** Whether a primitive may go ahead without `ready()`: open, and not closed. */
  private get usable(): boolean {
    return this.opened && this.closing === null;
  }

  /**
   * Whether a write may go ahead without `readyToWrite()`: usable, and (through Sentinel)
   * every connection still on the server its durability was probed on.
   */
  private get writable(): boolean {
    return this.usable && (this.primaryCheck === null || this.primaryCheck.current(this.clients));
  }

  /** `ready()`, then (through Sentinel) a probe of a primary a connection moved to. */
  private async readyToWrite(operation: string): Promise<void> {
    await this.ready(operation);
    if (this.primaryCheck !== null && !this.primaryCheck.current(this.clients)) {
      await this.primaryCheck.recheck(this.lanes);
    }
  }

  async getDocument(collection: Collection, id: string): Promise<StoredDocument | null> {
    await this.ready('read a document');
    return this.documents.get(collection, id);
  }

  async hasDocument(collection: Collection, id: string): Promise<boolean> {
    await this.ready('read a document');
    return this.documents.has(collection, id);
  }

  putDocument(
    collection: Collection,
    id: string,
    write: DocumentWrite,
    options: WriteOptions,
  ): Promise<PutResult> {
    // Not async once open: a save's write returns the document store's promise as it is.
    if (this.writable) return this.documents.put(collection, id, write, options);
    return this.readyToWrite('write a document').then(() =>
      this.documents.put(collection, id, write, options),
    );
  }

  async deleteDocument(
    collection: Collection,
    id: string,
    options: DeleteOptions,
  ): Promise<PutResult> {
    await this.readyToWrite('delete a document');
    return this.documents.delete(collection, id, options);
  }

  async listDocuments(collection: Collection, options: ListDocumentsOptions): Promise<IdPage> {
    await this.ready('list documents');
    return this.documents.list(collection, options);
  }

  async quarantineDocument(collection: Collection, id: string, reason: string): Promise<string> {
    await this.readyToWrite('quarantine a document');
    return this.quarantine.quarantine(collection, id, reason);
  }

  async listQuarantined(): Promise<QuarantinedDocument[]> {
    await this.ready('list quarantined documents');
    return this.quarantine.list();
  }

  async readQuarantined(location: string): Promise<string | null> {
    await this.ready('read quarantined bytes');
    return this.quarantine.read(location);
  }

  async putIndexEntry(summary: SessionSummary, options: { durable: boolean }): Promise<void> {
    await this.readyToWrite('write the index');
    await this.index.put(summary, options.durable);
  }

  async deleteIndexEntry(id: string, options: { durable: boolean }): Promise<void> {
    await this.readyToWrite('write the index');
    await this.index.delete(id, options.durable);
  }

  async replaceIndex(summaries: SessionSummary[], options: { durable: boolean }): Promise<void> {
    await this.readyToWrite('write the index');
    await this.index.replace(summaries, options.durable);
  }

  async listIndex(options: { cursor: string | null; limit: number }): Promise<IndexPage> {
    await this.ready('read the index');
    return this.index.list(options);
  }

  async appendLog(
    sessionId: string,
    runId: string,
    records: LogRecordInput[],
    options: { durability: LogDurability },
  ): Promise<AppendLogResult> {
    if (!this.writable) await this.readyToWrite('append to a journal');
    return this.journals.append(sessionId, runId, records, options.durability);
  }

  async readLog(
    sessionId: string,
    runId: string,
    options: { afterSequence: number; limit: number },
  ): Promise<LogReadResult> {
    await this.ready('read a journal');
    return this.journals.read(sessionId, runId, options);
  }

  async listLogs(sessionId: string): Promise<string[]> {
    await this.ready('list journals');
    return this.journals.list(sessionId);
  }

  async deleteLogs(sessionId: string, options: { durable: boolean }): Promise<void> {
    await this.readyToWrite('delete journals');
    await this.journals.deleteAll(sessionId, options.durable);
  }

  async deleteLog(sessionId: string, runId: string, options: { durable: boolean }): Promise<void> {
    await this.readyToWrite('delete a journal');
    await this.journals.delete(sessionId, runId, options.durable);
  }

  /**
   * C1: with `appendfsync always` every reply already followed its fsync; else WAITAOF or
   * WAIT on every connection (each confirms only what its own connection wrote).
   */
  async sync(): Promise<void> {
    await this.readyToWrite('sync');
    await Promise.all(
      this.lanes.map((lane) => lane.scripts.confirmAll(masters(lane.client), 'sync')),
    );
  }

  /** Closes every connection the adapter made (QUIT: replies in flight still arrive). */
  close(): Promise<void> {
    this.closing ??= this.owned
      ? Promise.all(this.clients.map(closeClient)).then(() => undefined)
      : Promise.resolve();
    return this.closing;
  }
}

/**
 * Whether the adapter's connections may move to another server on their own: through
 * Sentinel (`sentinels`, or a client passed in that was made with them).
 */
function followsFailovers(options: ResolvedRedisAdapterOptions, client: RedisClient): boolean {
  if (options.connection.kind === 'sentinel') return true;
  if (options.connection.kind !== 'client' || client.isCluster) return false;
  const sentinels = (client.options as { sentinels?: unknown[] | null } | undefined)?.sentinels;
  return Array.isArray(sentinels) && sentinels.length > 0;
}

/** How long close() waits for the server to close a connection after QUIT. */
const QUIT_GRACE_MS = 1_000;

async function closeClient(client: RedisClient): Promise<void> {
  if (client.status === 'end') return;
  if (client.status !== 'ready') {
    // Not connected yet, or reconnecting: nothing in flight is waited for.
    client.disconnect();
    return;
  }
  const ended = new Promise((resolve) => client.once('end', resolve));
  try {
    await client.quit();
  } catch {
    // QUIT fails when the connection is already gone: nothing is left to close.
    client.disconnect();
  }
  // The server closes the connection after its reply to QUIT; close() resolves once it has
  // (or ends it itself, should the server not do so soon).
  // (status is read again: QUIT changed it; TypeScript still holds the narrowing above.)
  if ((client.status as string) === 'end') return;
  const timer = setTimeout(() => client.disconnect(), QUIT_GRACE_MS);
  await ended;
  clearTimeout(timer);
}

/** Creates the Redis adapter; options are validated here (InvalidConfigError). */
export function redisAdapter(options: RedisAdapterOptions): RedisAdapter {
  const resolved = resolveOptions(options);
  const adapter = new RedisAdapter(resolved);
  return resolved.readOnly ? refuseWrites(adapter, 'The redis adapter') : adapter;
}

/** Creates the adapter and opens it: a server that cannot confirm the durability fails here. */
export async function openRedisAdapter(options: RedisAdapterOptions): Promise<RedisAdapter> {
  const adapter = redisAdapter(options);
  try {
    await adapter.open();
  } catch (error) {
    await adapter.close();
    throw error;
  }
  return adapter;
}
