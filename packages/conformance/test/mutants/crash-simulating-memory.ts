import {
  type Collection,
  createMemoryBackend,
  type DeleteOptions,
  type DocumentWrite,
  type LogDurability,
  type LogRecordInput,
  type MemoryBackend,
  memoryAdapter,
  type PutResult,
  type SessionSummary,
  type StorageAdapter,
  type WriteOptions,
} from '@keepsake/core';
import type { ConformanceInitializer } from '../../src/index.js';
import { DelegatingAdapter } from './delegating-adapter.js';

/**
 * The in-memory reference adapter with a power loss (issue 24): each namespace has the
 * data the adapter serves (`live`) and what reached "stable storage" (`stable`). A write
 * reaches stable storage only when the adapter was asked for durability (`durable`,
 * journal durability other than `none`, `sync()`); `simulateCrash` drops everything
 * else. The suite can thus verify B3, C1, C3, E2 and G9 on memory, and the gallery's
 * mutants that ignore `durable` or skip a flush are caught.
 */
interface CrashableNamespace {
  live: MemoryBackend;
  stable: MemoryBackend;
}

export interface CrashSimulatingMemory {
  readonly initializer: ConformanceInitializer;
  /** The namespace's live data (for `removeIndex` and the gallery's fs-free mutants). */
  backendOf(namespace: string): MemoryBackend;
}

export function crashSimulatingMemory(name = 'memory'): CrashSimulatingMemory {
  const namespaces = new Map<string, CrashableNamespace>();
  const namespaceOf = (namespace: string): CrashableNamespace => {
    let found = namespaces.get(namespace);
    if (found === undefined) {
      found = { live: createMemoryBackend(), stable: createMemoryBackend() };
      namespaces.set(namespace, found);
    }
    return found;
  };
  return {
    backendOf: (namespace) => namespaceOf(namespace).live,
    initializer: {
      name,
      async createAdapter(namespace) {
        const data = namespaceOf(namespace);
        return new PowerLossTrackingAdapter(memoryAdapter({ backend: data.live }), data);
      },
      async teardown() {
        namespaces.clear();
      },
      async simulateCrash(namespace) {
        const data = namespaceOf(namespace);
        copyBackend(data.stable, data.live);
      },
      // B7: the index is gone (null), as a lost index file is on fs; an out-of-band
      // removal is as permanent as the operator's `rm`.
      async removeIndex(namespace) {
        const data = namespaceOf(namespace);
        data.live.index = null;
        data.stable.index = null;
      },
    },
  };
}

/** Copies every part of `from` into `to`, in place (adapters hold `to`). */
function copyBackend(from: MemoryBackend, to: MemoryBackend): void {
  to.documents = new Map([...from.documents].map(([key, value]) => [key, copyDocument(value)]));
  to.index = copyIndex(from.index);
  to.logs = new Map([...from.logs].map(([key, records]) => [key, records.map(copyRecord)]));
  to.quarantine = [...from.quarantine];
  to.quarantinedBytes = new Map(from.quarantinedBytes);
}

type StoredEntry = MemoryBackend['documents'] extends Map<string, infer V> ? V : never;

function copyDocument(document: StoredEntry): StoredEntry {
  return { revision: document.revision, base: document.base, deltas: [...document.deltas] };
}

function copyRecord(record: LogRecordInput): LogRecordInput {
  return { ...record };
}

function copyIndex(index: MemoryBackend['index']): MemoryBackend['index'] {
  return index === null ? null : new Map([...index].map(([id, entry]) => [id, { ...entry }]));
}

/** Forwards to the memory adapter, then copies what a durable call wrote to `stable`. */
class PowerLossTrackingAdapter extends DelegatingAdapter {
  constructor(
    inner: StorageAdapter,
    private readonly data: CrashableNamespace,
  ) {
    super(inner);
  }

  private persistDocument(collection: Collection, id: string): void {
    const key = `${collection}/${id}`;
    const live = this.data.live.documents.get(key);
    if (live === undefined) this.data.stable.documents.delete(key);
    else this.data.stable.documents.set(key, copyDocument(live));
  }

  private persistIndex(): void {
    this.data.stable.index = copyIndex(this.data.live.index);
  }

  private persistLogsOf(sessionId: string): void {
    for (const key of new Set([...this.data.live.logs.keys(), ...this.data.stable.logs.keys()])) {
      if (!key.startsWith(`${sessionId}/`)) continue;
      const live = this.data.live.logs.get(key);
      if (live === undefined) this.data.stable.logs.delete(key);
      else this.data.stable.logs.set(key, live.map(copyRecord));
    }
  }

  override async putDocument(
    collection: Collection,
    id: string,
    write: DocumentWrite,
    options: WriteOptions,
  ): Promise<PutResult> {
    const result = await super.putDocument(collection, id, write, options);
    if (result.ok && options.durable) {
      this.persistDocument(collection, id);
      if (options.indexEntry !== undefined) this.persistIndex();
    }
    return result;
  }

  override async deleteDocument(
    collection: Collection,
    id: string,
    options: DeleteOptions,
  ): Promise<PutResult> {
    const result = await super.deleteDocument(collection, id, options);
    if (result.ok && options.durable) this.persistDocument(collection, id);
    return result;
  }

  /** A quarantine is a rename on fs: treated as durable at once, like the fs adapter's. */
  override async quarantineDocument(
    collection: Collection,
    id: string,
    reason: string,
  ): Promise<string> {
    const location = await super.quarantineDocument(collection, id, reason);
    this.persistDocument(collection, id);
    this.data.stable.quarantine = [...this.data.live.quarantine];
    this.data.stable.quarantinedBytes = new Map(this.data.live.quarantinedBytes);
    return location;
  }

  override async putIndexEntry(
    summary: SessionSummary,
    options: { durable: boolean },
  ): Promise<void> {
    await super.putIndexEntry(summary, options);
    if (options.durable) this.persistIndex();
  }

  override async deleteIndexEntry(id: string, options: { durable: boolean }): Promise<void> {
    await super.deleteIndexEntry(id, options);
    if (options.durable) this.persistIndex();
  }

  override async replaceIndex(
    summaries: SessionSummary[],
    options: { durable: boolean },
  ): Promise<void> {
    await super.replaceIndex(summaries, options);
    if (options.durable) this.persistIndex();
  }

  override async appendLog(
    sessionId: string,
    runId: string,
    records: LogRecordInput[],
    options: { durability: LogDurability },
  ) {
    const result = await super.appendLog(sessionId, runId, records, options);
    if (result.ok && options.durability !== 'none') {
      const key = `${sessionId}/${runId}`;
      const live = this.data.live.logs.get(key);
      if (live !== undefined) this.data.stable.logs.set(key, live.map(copyRecord));
    }
    return result;
  }

  override async deleteLogs(sessionId: string, options: { durable: boolean }): Promise<void> {
    await super.deleteLogs(sessionId, options);
    if (options.durable) this.persistLogsOf(sessionId);
  }

  override async deleteLog(
    sessionId: string,
    runId: string,
    options: { durable: boolean },
  ): Promise<void> {
    await super.deleteLog(sessionId, runId, options);
    if (options.durable) this.data.stable.logs.delete(`${sessionId}/${runId}`);
  }

  /** C1: everything written so far reaches stable storage. */
  override async sync(): Promise<void> {
    await super.sync();
    copyBackend(this.data.live, this.data.stable);
  }
}
