import {
  BackendError,
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
import type {
  BackendFaultKind,
  BackendFaultTarget,
  ConformanceInitializer,
} from '../../src/index.js';
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
  /** Faults `injectBackendFault` planted, each met once by the next call on its target. */
  faults: BackendFault[];
}

interface BackendFault {
  readonly target: BackendFaultTarget;
  readonly kind: BackendFaultKind;
}

export interface CrashSimulatingMemory {
  readonly initializer: ConformanceInitializer;
  /** The namespace's live data (for `removeIndex` and the gallery's fs-free mutants). */
  backendOf(namespace: string): MemoryBackend;
}

export interface CrashSimulationOptions {
  /**
   * A single write-ahead log (SQLite in WAL mode, a Redis AOF): every durable call makes
   * everything written before it durable, not only its own write (issue 42 item 6).
   */
  singleLog?: boolean;
  /** A hook that drops nothing: `simulateCrash` keeps every write (issue 42 item 5). */
  lossless?: boolean;
}

export function crashSimulatingMemory(
  name = 'memory',
  simulation: CrashSimulationOptions = {},
): CrashSimulatingMemory {
  const namespaces = new Map<string, CrashableNamespace>();
  const namespaceOf = (namespace: string): CrashableNamespace => {
    let found = namespaces.get(namespace);
    if (found === undefined) {
      found = { live: createMemoryBackend(), stable: createMemoryBackend(), faults: [] };
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
        return new PowerLossTrackingAdapter(
          memoryAdapter({ backend: data.live }),
          data,
          simulation.singleLog === true,
        );
      },
      async teardown() {
        namespaces.clear();
      },
      async simulateCrash(namespace) {
        const data = namespaceOf(namespace);
        if (simulation.lossless !== true) copyBackend(data.stable, data.live);
      },
      // B2: the next call of the namespace's adapters on `target` fails, as a backend's
      // would: typed by the adapter, retryable exactly when the fault is transient.
      backendFaultKinds: ['transient', 'permanent'],
      injectBackendFault(namespace, target, kind = 'transient') {
        const data = namespaceOf(namespace);
        const fault: BackendFault = { target, kind };
        data.faults.push(fault);
        return () => {
          const index = data.faults.indexOf(fault);
          if (index >= 0) data.faults.splice(index, 1);
        };
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
    private readonly singleLog: boolean,
  ) {
    super(inner);
  }

  /** B2: meets the fault planted for `target`, if any (once). */
  private meetFault(target: BackendFaultTarget, operation: string): void {
    const index = this.data.faults.findIndex((fault) => fault.target === target);
    if (index < 0) return;
    const [fault] = this.data.faults.splice(index, 1);
    const transient = fault!.kind === 'transient';
    const cause = Object.assign(
      new Error(transient ? 'EIO: i/o error (injected)' : 'EACCES: permission denied (injected)'),
      { code: transient ? 'EIO' : 'EACCES' },
    );
    throw new BackendError(this.name, operation, { cause, isRetryable: transient });
  }

  /** With a single log, every durable call makes everything before it durable. */
  private persistAll(): boolean {
    if (!this.singleLog) return false;
    copyBackend(this.data.live, this.data.stable);
    return true;
  }

  override async getDocument(collection: Collection, id: string) {
    if (collection === 'sessions') this.meetFault('documents', 'read a session');
    return super.getDocument(collection, id);
  }

  override async listIndex(options: { cursor: string | null; limit: number }) {
    this.meetFault('index', 'read the index');
    return super.listIndex(options);
  }

  private persistDocument(collection: Collection, id: string): void {
    if (this.persistAll()) return;
    const key = `${collection}/${id}`;
    const live = this.data.live.documents.get(key);
    if (live === undefined) this.data.stable.documents.delete(key);
    else this.data.stable.documents.set(key, copyDocument(live));
  }

  private persistIndex(): void {
    if (this.persistAll()) return;
    this.data.stable.index = copyIndex(this.data.live.index);
  }

  private persistLogsOf(sessionId: string): void {
    if (this.persistAll()) return;
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
    if (collection === 'sessions') this.meetFault('documents', 'write a session');
    if (options.indexEntry !== undefined) {
      // B7: the document lands, its entry does not, and the adapter says so.
      let indexFailure: Error | null = null;
      try {
        this.meetFault('index', 'write the index');
      } catch (error) {
        indexFailure = error as Error;
      }
      if (indexFailure !== null) {
        const { indexEntry: _lost, ...withoutEntry } = options;
        const landed = await this.putDocument(collection, id, write, withoutEntry);
        return landed.ok ? { ok: true, indexFailure } : landed;
      }
    }
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
    this.meetFault('index', 'write the index');
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
    if (result.ok && options.durability !== 'none' && !this.persistAll()) {
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
    if (options.durable && !this.persistAll()) {
      this.data.stable.logs.delete(`${sessionId}/${runId}`);
    }
  }

  /** C1: everything written so far reaches stable storage. */
  override async sync(): Promise<void> {
    await super.sync();
    copyBackend(this.data.live, this.data.stable);
  }
}
