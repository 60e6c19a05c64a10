import { randomInt } from 'node:crypto';
import { InvalidInputError, type StorageAdapter } from '@keepsake/core';
import type { RunnableConfig } from '@langchain/core/runnables';
import {
  BaseCheckpointSaver,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointPendingWrite,
  type CheckpointTuple,
  compareWritesSortKeys,
  copyCheckpoint,
  getCheckpointId,
  maxChannelVersion,
  type PendingWrite,
  type SerializerProtocol,
  TASKS,
  WRITES_IDX_MAP,
  writesSortKey,
} from '@langchain/langgraph-checkpoint';
import {
  AdapterDocuments,
  mapConcurrently,
  READ_CONCURRENCY,
  REPLACE_ATTEMPTS,
} from './adapter-documents.js';
import { CheckpointListing } from './checkpoint-listing.js';
import { DocumentIds, decodeSegment, encodeSegment, segmentCount } from './document-ids.js';
import {
  bytesOf,
  type CheckpointDocument,
  checkpointDocumentSchema,
  FORMAT_VERSION,
  type SerializedValue,
  toSerialized,
  type WriteDocument,
  writeDocumentSchema,
} from './documents.js';
import {
  CheckpointConflictError,
  CorruptCheckpointError,
  MissingChannelSourceError,
  type MissingChannelSourceProblem,
} from './errors.js';
import { LOG_RUN_ID, type ThreadLog, ThreadLogs } from './log-store.js';
import { metadataMatches } from './metadata-filter.js';

export interface KeepsakeSaverOptions {
  /** Any Keepsake storage adapter: `fsAdapter`, `redisAdapter`, `s3Adapter`, `memoryAdapter`. */
  adapter: StorageAdapter;
  /**
   * B3: with true, `put` and `putWrites` resolve only once their documents are as durable as
   * the adapter can make them (fsynced on fs, in the AOF on Redis, acknowledged by S3). With
   * false, nothing waits for a flush; `flush()` makes everything durable.
   * @default true
   */
  durable?: boolean;
  /**
   * The saver calls `adapter.open()` once, before its first call. Pass true when the adapter
   * was already opened (by a Keepsake session store sharing it, for instance).
   * @default false
   */
  adapterOpened?: boolean;
  /** LangGraph's serializer; the default is `JsonPlusSerializer`. */
  serde?: SerializerProtocol;
  /**
   * Where new threads are stored: `log` (one append-only log per thread, the adapter's run
   * journal primitives, see log-store.ts) or `documents` (a document per checkpoint and per
   * `putWrites` call, the layout before 0.2). Threads stored as documents stay documents
   * and are read and written as before, whichever is chosen.
   * @default 'log'
   */
  layout?: 'log' | 'documents';
}

/** One stored pending write, with the task that made it. */
interface StoredWrite {
  readonly holder: Holder;
  readonly taskId: string;
  readonly taskPath: string;
  readonly idx: number;
  readonly channel: string;
  readonly value: SerializedValue;
}

/** One write as a pending-writes document stores it. */
type StoredEntry = WriteDocument['writes'][number];

/**
 * The writes of one document after a putWrites call merged into it, as MemorySaver keeps
 * them per (task, index): a special write (negative index) replaces the stored one (and a
 * later one in the call an earlier one); a regular write already stored stays.
 */
function mergeWrites(
  kept: readonly StoredEntry[],
  incoming: ReadonlyArray<Omit<StoredEntry, 'order'>>,
  order: number,
): StoredEntry[] {
  const merged = [...kept];
  for (const write of incoming) {
    const at = merged.findIndex((stored) => stored.idx === write.idx);
    if (at === -1) merged.push({ ...write, order });
    else if (write.idx < 0) merged[at] = { ...write, order };
  }
  return merged;
}

/** The document or log record a serialized value came from, quarantined when it is damaged. */
type Holder =
  | { readonly collection: 'checkpoints' | 'checkpoint-writes'; readonly id: string }
  | { readonly thread: ThreadLog; readonly sequence: number };

function checkpointHolder(document: CheckpointDocument): Holder {
  const ids = new DocumentIds(document.thread_id, document.checkpoint_ns);
  return { collection: 'checkpoints', id: ids.checkpoint(document.checkpoint_id) };
}

/** How a tuple finds what its checkpoint points at: in documents, or in the thread's log. */
interface Lookup {
  /** The stored checkpoint under this id in the thread's namespace (check its placement). */
  checkpoint(checkpointId: string): Promise<CheckpointDocument | null>;
  /** Whether it is stored, as cheaply as the layout allows. */
  stored(checkpointId: string): Promise<boolean>;
  holder(document: CheckpointDocument): Holder;
  /** The checkpoint's pending writes, one per (task, index), in any order. */
  writes(checkpointId: string): Promise<StoredWrite[]>;
}

/** A thread in the log layout carries one document in `checkpoints`: `<thread>`, so `list` finds it. */
const threadMarkerSchema = {
  parse(text: string): string | null {
    try {
      const value = JSON.parse(text) as { keepsake?: unknown; thread_id?: unknown };
      return value.keepsake === 'langgraph-thread' && typeof value.thread_id === 'string'
        ? value.thread_id
        : null;
    } catch {
      return null;
    }
  },
};

/** LangGraph's configurable fields, as the saver reads them. */
interface Placement {
  readonly threadId: string;
  readonly namespace: string;
}

/**
 * A LangGraph.js checkpoint saver on any Keepsake storage adapter. Checkpoints, channel
 * values and pending writes are documents of the adapter's `checkpoints` and
 * `checkpoint-writes` collections (see document-ids.ts and documents.ts), so they get the
 * adapter's guarantees: each document is written atomically (B1) and, with `durable`, as
 * durably as the backend allows (B3); writers in other processes never overwrite each
 * other's work (B4); a document that does not parse is quarantined, never deleted (A2).
 *
 * A `put` is one document: the checkpoint with the values of the channels in `newVersions`
 * and, for every other channel, a pointer to the checkpoint that holds its value at this
 * version (LangGraph passes the previous checkpoint it stored as the parent, and
 * `newVersions` relative to it, so that checkpoint or one it points at holds the value).
 * Once `put` resolves, the checkpoint and everything it needs are stored; a crash before
 * that leaves nothing of it.
 */
export class KeepsakeSaver extends BaseCheckpointSaver {
  readonly adapter: StorageAdapter;
  private readonly documents: AdapterDocuments;
  private readonly listing: CheckpointListing;
  private opening: Promise<void> | null;
  private lastOrder = 0;
  /** The log layout's threads; null with `layout: 'documents'`. */
  private readonly logs: ThreadLogs | null;
  /** Threads whose layout this instance found: a log, or documents stored before 0.2. */
  private readonly layouts = new Map<string, 'log' | 'documents'>();
  /** Threads whose marker document this instance wrote or found. */
  private readonly marked = new Set<string>();
  private readonly durable: boolean;

  constructor(options: KeepsakeSaverOptions) {
    super(options.serde);
    this.adapter = options.adapter;
    this.durable = options.durable ?? true;
    this.documents = new AdapterDocuments(options.adapter, this.durable);
    this.listing = new CheckpointListing(this.documents);
    this.opening = options.adapterOpened === true ? Promise.resolve() : null;
    this.logs =
      (options.layout ?? 'log') === 'log' ? new ThreadLogs(options.adapter, this.durable) : null;
  }

  /**
   * The layout a thread is stored in: `documents` when it has documents and no log (stored
   * before 0.2, or by a saver with `layout: 'documents'`), else the layout chosen. A thread
   * found with a log or documents keeps its answer for this instance.
   */
  private async layoutOf(threadId: string): Promise<'log' | 'documents'> {
    if (this.logs === null) return 'documents';
    const known = this.layouts.get(threadId);
    if (known !== undefined) return known;
    const thread = await this.logs.current(threadId);
    if (thread.exists) {
      this.layouts.set(threadId, 'log');
      return 'log';
    }
    const stored = await this.documents.list('checkpoints', DocumentIds.threadPrefix(threadId));
    if (stored.some((id) => segmentCount(id) === 3)) {
      this.layouts.set(threadId, 'documents');
      return 'documents';
    }
    return 'log';
  }

  private documentLookup(placement: Placement): Lookup {
    const ids = new DocumentIds(placement.threadId, placement.namespace);
    return {
      checkpoint: (checkpointId) =>
        this.documents.read('checkpoints', ids.checkpoint(checkpointId), checkpointDocumentSchema),
      stored: (checkpointId) => this.documents.exists('checkpoints', ids.checkpoint(checkpointId)),
      holder: checkpointHolder,
      writes: (checkpointId) => this.documentWrites(ids, placement, checkpointId),
    };
  }

  private logLookup(thread: ThreadLog, namespace: string): Lookup {
    const logs = this.logs!;
    const find = async (checkpointId: string) => {
      let found = thread.checkpoint(namespace, checkpointId);
      if (found === undefined) {
        // Put by another instance since this one read the log: read what it missed.
        await logs.current(thread.threadId);
        found = thread.checkpoint(namespace, checkpointId);
      }
      return found?.document ?? null;
    };
    return {
      checkpoint: find,
      stored: async (checkpointId) => (await find(checkpointId)) !== null,
      holder: (document) => ({
        thread,
        sequence: thread.checkpoint(namespace, document.checkpoint_id)?.sequence ?? 0,
      }),
      writes: async (checkpointId) =>
        thread.pendingWrites(namespace, checkpointId).map((write) => ({
          holder: { thread, sequence: write.sequence },
          taskId: write.taskId,
          taskPath: write.taskPath,
          idx: write.idx,
          channel: write.channel,
          value: write.value,
        })),
    };
  }

  /** Writes the thread's marker once per instance (a conditional create: the first wins). */
  private async mark(threadId: string): Promise<void> {
    if (this.marked.has(threadId)) return;
    await this.adapter.putDocument(
      'checkpoints',
      encodeSegment(threadId),
      {
        kind: 'full',
        revision: 1,
        text: JSON.stringify({ keepsake: 'langgraph-thread', thread_id: threadId }),
      },
      { expectedRevision: null, durable: this.durable },
    );
    this.marked.add(threadId);
  }

  /** Threads in the log layout, from their markers. */
  private async loggedThreads(): Promise<string[]> {
    const markers = (await this.documents.list('checkpoints')).filter(
      (id) => segmentCount(id) === 1,
    );
    const threads = await mapConcurrently(markers, READ_CONCURRENCY, async (id) => {
      const decoded = decodeSegment(id);
      if (decoded !== null) return decoded;
      const stored = await this.adapter.getDocument('checkpoints', id);
      return stored === null ? null : threadMarkerSchema.parse(stored.base);
    });
    return threads.filter((thread): thread is string => thread !== null);
  }

  /**
   * Channel versions are the next integer plus a random fraction below one half, so two
   * branches forked from one checkpoint never give the same version of a channel two
   * different values (a checkpoint finds an unchanged channel's value by its version).
   * They stay numbers and increase, as LangGraph requires.
   */
  override getNextVersion(current: number | undefined): number {
    const previous =
      typeof current === 'number'
        ? current
        : typeof current === 'string'
          ? Number.parseInt(String(current).split('.')[0] ?? '0', 10)
          : 0;
    const next = (Number.isFinite(previous) ? Math.floor(previous) : 0) + 1;
    return next + randomFraction();
  }

  async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    const threadId = config.configurable?.thread_id;
    if (threadId === undefined) return undefined;
    const placement = placementOf(threadId, config.configurable?.checkpoint_ns ?? '');
    const ids = new DocumentIds(placement.threadId, placement.namespace);
    await this.ready();
    const checkpointId = getCheckpointId(config);
    if ((await this.layoutOf(placement.threadId)) === 'log') {
      const thread = await this.logs!.current(placement.threadId);
      const id = checkpointId !== '' ? checkpointId : thread.ids(placement.namespace)[0];
      const found = id === undefined ? undefined : thread.checkpoint(placement.namespace, id);
      if (found === undefined) return undefined;
      return this.toTuple(found.document, this.logLookup(thread, placement.namespace));
    }
    let document: CheckpointDocument | null;
    if (checkpointId !== '') {
      document = await this.documents.read(
        'checkpoints',
        ids.checkpoint(checkpointId),
        checkpointDocumentSchema,
      );
      // A hashed id names the document it asked for only when the document says so.
      if (document !== null && !sameCheckpoint(document, placement, checkpointId)) return undefined;
    } else {
      document = await this.listing.newest(placement);
    }
    return document === null ? undefined : this.toTuple(document, this.documentLookup(placement));
  }

  async *list(
    config: RunnableConfig,
    options: CheckpointListOptions = {},
  ): AsyncGenerator<CheckpointTuple> {
    const { limit, before, filter } = options;
    const threadId = optionalString(config.configurable?.thread_id, 'thread_id');
    const namespace = optionalString(config.configurable?.checkpoint_ns, 'checkpoint_ns');
    const onlyId = optionalString(config.configurable?.checkpoint_id, 'checkpoint_id');
    const beforeId = optionalString(before?.configurable?.checkpoint_id, 'before.checkpoint_id');
    await this.ready();
    let remaining = limit ?? Number.POSITIVE_INFINITY;
    if (remaining <= 0) return;
    const wanted = (checkpointId: string) =>
      (onlyId === undefined || checkpointId === onlyId) &&
      (beforeId === undefined || checkpointId < beforeId);
    // Candidates from both layouts, newest first: documents are read a few at a time ahead
    // of the consumer; a log's checkpoints are in the index already.
    type Candidate = {
      readonly checkpointId: string;
      readonly load: () => Promise<{ document: CheckpointDocument; lookup: Lookup } | null>;
    };
    const candidates: Candidate[] = [];
    const threads =
      threadId !== undefined
        ? (await this.layoutOf(threadId)) === 'log'
          ? [threadId]
          : []
        : this.logs === null
          ? []
          : await this.loggedThreads();
    if (threadId === undefined || !threads.includes(threadId)) {
      for (const entry of await this.listing.entries(threadId, namespace)) {
        if (!wanted(entry.checkpointId)) continue;
        candidates.push({
          checkpointId: entry.checkpointId,
          load: async () => {
            const document = await this.listing.document(entry);
            if (document === null) return null;
            if (threadId !== undefined && document.thread_id !== threadId) return null;
            if (namespace !== undefined && document.checkpoint_ns !== namespace) return null;
            const placement = { threadId: document.thread_id, namespace: document.checkpoint_ns };
            return { document, lookup: this.documentLookup(placement) };
          },
        });
      }
    }
    for (const logged of threads) {
      const thread = await this.logs!.current(logged);
      for (const ns of namespace !== undefined ? [namespace] : thread.namespaces()) {
        const lookup = this.logLookup(thread, ns);
        for (const checkpointId of thread.ids(ns)) {
          if (!wanted(checkpointId)) continue;
          const document = thread.checkpoint(ns, checkpointId)?.document;
          if (document === undefined) continue;
          candidates.push({ checkpointId, load: async () => ({ document, lookup }) });
        }
      }
    }
    if (threads.length > 1 || candidates.length > 0) {
      candidates.sort((left, right) =>
        left.checkpointId < right.checkpointId
          ? 1
          : left.checkpointId > right.checkpointId
            ? -1
            : 0,
      );
    }
    for (let start = 0; start < candidates.length && remaining > 0; start += READ_CONCURRENCY) {
      const batch = candidates.slice(start, start + READ_CONCURRENCY);
      const loaded = await mapConcurrently(batch, READ_CONCURRENCY, (candidate) =>
        candidate.load(),
      );
      for (const found of loaded) {
        if (remaining <= 0) return;
        if (found === null) continue;
        const { document, lookup } = found;
        if (filter !== undefined) {
          const metadata = await this.deserialize(document.metadata, lookup.holder(document));
          if (!metadataMatches(metadata, filter)) continue;
        }
        remaining--;
        yield await this.toTuple(document, lookup);
      }
    }
  }

  async put(
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    newVersions: ChannelVersions,
  ): Promise<RunnableConfig> {
    if (config.configurable === undefined) {
      throw new InvalidInputError('put: the config has no `configurable` (thread_id is needed)', {
        path: 'configurable',
      });
    }
    const placement = requiredPlacement(config, 'put');
    const parentId = optionalString(config.configurable.checkpoint_id, 'checkpoint_id');
    const ids = new DocumentIds(placement.threadId, placement.namespace);
    await this.ready();
    const prepared = copyCheckpoint(checkpoint);
    const channelValues: Record<string, unknown> = prepared.channel_values;
    prepared.channel_values = {};
    const values: CheckpointDocument['values'] = {};
    await Promise.all(
      Object.entries(newVersions).map(async ([channel, version]) => {
        values[channel] = {
          version,
          value: channel in channelValues ? await this.serialize(channelValues[channel]) : null,
        };
      }),
    );
    const layout = await this.layoutOf(placement.threadId);
    const thread = layout === 'log' ? this.logs!.thread(placement.threadId) : null;
    const lookup =
      thread === null
        ? this.documentLookup(placement)
        : this.logLookup(thread, placement.namespace);
    const sources = await this.sourcesOf(
      { ...placement, checkpointId: checkpoint.id },
      parentId,
      prepared.channel_versions,
      values,
      channelValues,
      lookup,
    );
    const [serializedCheckpoint, serializedMetadata] = await Promise.all([
      this.serialize(prepared),
      this.serialize(metadata),
    ]);
    const document: CheckpointDocument = {
      keepsake: 'langgraph-checkpoint',
      v: FORMAT_VERSION,
      thread_id: placement.threadId,
      checkpoint_ns: placement.namespace,
      checkpoint_id: checkpoint.id,
      parent_checkpoint_id: parentId ?? null,
      checkpoint: serializedCheckpoint,
      metadata: serializedMetadata,
      values,
      sources,
    };
    if (thread !== null) {
      // One record: the checkpoint is stored whole or not at all (B1), durably when asked (B3).
      await this.mark(placement.threadId);
      await this.logs!.append(thread, { k: 'c', d: document });
      this.layouts.set(placement.threadId, 'log');
      return {
        configurable: {
          thread_id: placement.threadId,
          checkpoint_ns: placement.namespace,
          checkpoint_id: checkpoint.id,
        },
      };
    }
    // A checkpoint put again (the same id) is replaced whole, as other savers do.
    await this.documents.replace(
      'checkpoints',
      ids.checkpoint(checkpoint.id),
      JSON.stringify(document),
    );
    return {
      configurable: {
        thread_id: placement.threadId,
        checkpoint_ns: placement.namespace,
        checkpoint_id: checkpoint.id,
      },
    };
  }

  async putWrites(
    config: RunnableConfig,
    writes: PendingWrite[],
    taskId: string,
    taskPath = '',
  ): Promise<void> {
    const placement = requiredPlacement(config, 'putWrites');
    const checkpointId = optionalString(config.configurable?.checkpoint_id, 'checkpoint_id');
    if (checkpointId === undefined || checkpointId === '') {
      throw new InvalidInputError('putWrites: the config names no checkpoint_id', {
        path: 'configurable.checkpoint_id',
      });
    }
    if (typeof taskId !== 'string') {
      throw new InvalidInputError('putWrites: taskId must be a string', { path: 'taskId' });
    }
    if (writes.length === 0) return;
    const ids = new DocumentIds(placement.threadId, placement.namespace);
    await this.ready();
    // Special writes (errors, interrupts, resumes) have fixed negative indices; regular ones
    // their position in the call.
    const indexed = await Promise.all(
      writes.map(async ([channel, value], index) => ({
        idx: WRITES_IDX_MAP[channel] ?? index,
        channel,
        value: await this.serialize(value),
      })),
    );
    const documentOf = (writes: StoredEntry[]): string =>
      JSON.stringify({
        keepsake: 'langgraph-writes',
        v: FORMAT_VERSION,
        thread_id: placement.threadId,
        checkpoint_ns: placement.namespace,
        checkpoint_id: checkpointId,
        task_id: taskId,
        task_path: taskPath,
        writes,
      } satisfies WriteDocument);
    if ((await this.layoutOf(placement.threadId)) === 'log') {
      // One record per call: all of a task's writes or none (B1). The log orders them, so
      // a later special write replaces an earlier one when read, and no read is needed here.
      const thread = this.logs!.thread(placement.threadId);
      await this.mark(placement.threadId);
      await this.logs!.append(thread, {
        k: 'w',
        d: {
          keepsake: 'langgraph-writes',
          v: FORMAT_VERSION,
          thread_id: placement.threadId,
          checkpoint_ns: placement.namespace,
          checkpoint_id: checkpointId,
          task_id: taskId,
          task_path: taskPath,
          writes: indexed,
        },
      });
      this.layouts.set(placement.threadId, 'log');
      return;
    }
    // One document per call, named by its first index: all of a task's writes or none (B1).
    const id = ids.write(checkpointId, taskId, indexed[0]!.idx);
    const special = indexed.some((write) => write.idx < 0);
    // The common call: regular writes under a new id, one write. A retried task meets its
    // first document stored and merges into it below (first write wins for each index).
    if (!special) {
      const order = this.nextOrder(0);
      const created = await this.documents.create(
        'checkpoint-writes',
        id,
        documentOf(indexed.map((write) => ({ ...write, order }))),
      );
      if (created) return;
    }
    const belongs = (document: WriteDocument) =>
      document.thread_id === placement.threadId &&
      document.checkpoint_ns === placement.namespace &&
      document.checkpoint_id === checkpointId &&
      document.task_id === taskId;
    for (let attempt = 0; attempt < REPLACE_ATTEMPTS; attempt++) {
      // A special write (an error, an interrupt, a resume) replaces the one stored before, as
      // MemorySaver does, in whichever of the task's documents that one is: its order is above
      // every order the task's documents hold (read, not the clock, so a write made after
      // another instance's write is ordered after it whatever the two clocks say).
      let highest = 0;
      if (special) {
        const others = (
          await this.documents.list('checkpoint-writes', ids.taskWritesPrefix(checkpointId, taskId))
        ).filter((other) => other !== id);
        const documents = await mapConcurrently(others, READ_CONCURRENCY, (other) =>
          this.documents.read('checkpoint-writes', other, writeDocumentSchema),
        );
        for (const document of documents) {
          if (document === null || !belongs(document)) continue;
          for (const write of document.writes) highest = Math.max(highest, write.order ?? 0);
        }
      }
      const existing = await this.documents.readRevisioned(
        'checkpoint-writes',
        id,
        writeDocumentSchema,
      );
      const kept = existing !== null && belongs(existing.document) ? existing.document.writes : [];
      for (const write of kept) highest = Math.max(highest, write.order ?? 0);
      const merged = mergeWrites(kept, indexed, this.nextOrder(highest + 1));
      // Conditional on the revision read: a writer in between makes this merge again (B4).
      const written = await this.documents.replaceAt(
        'checkpoint-writes',
        id,
        documentOf(merged),
        existing?.revision ?? null,
      );
      if (written) return;
    }
    throw new CheckpointConflictError(`checkpoint-writes/${id}`, REPLACE_ATTEMPTS);
  }

  /**
   * Deletes every checkpoint and pending write of the thread, checkpoints first: a crash
   * part-way leaves only writes no checkpoint has, which the next `deleteThread` removes.
   */
  async deleteThread(threadId: string): Promise<void> {
    const thread = placementOf(threadId, '').threadId;
    await this.ready();
    this.layouts.delete(thread);
    await this.logs?.delete(thread);
    const prefix = DocumentIds.threadPrefix(thread);
    for (const collection of ['checkpoints', 'checkpoint-writes'] as const) {
      const ids = await this.documents.list(collection, prefix);
      await mapConcurrently(ids, READ_CONCURRENCY, (id) => this.documents.delete(collection, id));
    }
    // The marker last: a crash before leaves a thread `list` finds empty, never a lost one.
    this.marked.delete(thread);
    await this.documents.delete('checkpoints', encodeSegment(thread));
  }

  /** C1: makes everything written so far durable (what `durable: false` left unflushed). */
  async flush(): Promise<void> {
    await this.ready();
    await this.adapter.sync();
  }

  /** Closes the adapter (flushing first, as every adapter's `close()` does). Idempotent. */
  async close(): Promise<void> {
    await this.adapter.close();
  }

  private ready(): Promise<void> {
    this.opening ??= this.adapter.open().catch((error: unknown) => {
      // A failed open is tried again by the next call, not remembered forever.
      this.opening = null;
      throw error;
    });
    return this.opening;
  }

  private async toTuple(document: CheckpointDocument, lookup: Lookup): Promise<CheckpointTuple> {
    const placement = { threadId: document.thread_id, namespace: document.checkpoint_ns };
    const [checkpoint, metadata, pendingWrites] = await Promise.all([
      this.deserialize(document.checkpoint, lookup.holder(document)) as Promise<Checkpoint>,
      this.deserialize(document.metadata, lookup.holder(document)) as Promise<CheckpointMetadata>,
      this.pendingWrites(lookup, document.checkpoint_id),
    ]);
    checkpoint.channel_values = await this.channelValues(
      document,
      checkpoint.channel_versions,
      lookup,
    );
    const parentId = document.parent_checkpoint_id;
    if (checkpoint.v < 4 && parentId !== null) {
      await this.migratePendingSends(checkpoint, lookup, parentId);
    }
    const configurable = (checkpointId: string) => ({
      configurable: {
        thread_id: placement.threadId,
        checkpoint_ns: placement.namespace,
        checkpoint_id: checkpointId,
      },
    });
    const tuple: CheckpointTuple = {
      config: configurable(document.checkpoint_id),
      checkpoint,
      metadata,
      pendingWrites,
    };
    if (parentId !== null) tuple.parentConfig = configurable(parentId);
    return tuple;
  }

  /**
   * Where each channel the new checkpoint did not write has its value at its version: the
   * parent, when the parent wrote that version, or the checkpoint the parent points at.
   * A channel whose version no stored checkpoint wrote (LangGraph's own bookkeeping before a
   * first write, a put without a parent) has no value, as in every LangGraph saver.
   *
   * A pointer is never copied to a checkpoint that is gone (A2: quarantined or deleted), nor
   * made to a parent that is gone: when LangGraph passed the channel's value, it is written
   * into this checkpoint instead (into `values`); otherwise the put fails with
   * `MissingChannelSourceError`, and nothing is written. Whether a pointed-at checkpoint is
   * stored is asked once per checkpoint and instance (`exists`), so a put stays one read of
   * its parent and one write in the steady state.
   */
  private async sourcesOf(
    target: Placement & { readonly checkpointId: string },
    parentId: string | undefined,
    versions: ChannelVersions,
    values: CheckpointDocument['values'],
    known: Record<string, unknown>,
    lookup: Lookup,
  ): Promise<CheckpointDocument['sources']> {
    const sources: CheckpointDocument['sources'] = {};
    const unchanged = Object.entries(versions ?? {}).filter(([channel]) => !(channel in values));
    if (unchanged.length === 0 || parentId === undefined) return sources;
    const parent = await lookup.checkpoint(parentId);
    const parentHere = parent !== null && sameCheckpoint(parent, target, parentId);
    // Each pointed-at checkpoint is checked once, however many channels it holds.
    const pointedAt = new Map<string, Promise<boolean>>();
    const stored = (checkpointId: string) => {
      let found = pointedAt.get(checkpointId);
      if (found === undefined) {
        found = lookup.stored(checkpointId);
        pointedAt.set(checkpointId, found);
      }
      return found;
    };
    await Promise.all(
      unchanged.map(async ([channel, version]) => {
        let source: { version: number | string; checkpoint_id: string } | undefined;
        let gone: { checkpointId: string; problem: MissingChannelSourceProblem } | undefined;
        if (!parentHere) {
          // The parent itself is gone (or was never stored): what it held is unknown.
          if (parent === null) gone = { checkpointId: parentId, problem: 'missing' };
          else gone = { checkpointId: parentId, problem: 'other-thread' };
        } else if (parent.values[channel]?.version === version) {
          source = { version, checkpoint_id: parentId };
        } else if (parent.sources[channel]?.version === version) {
          source = parent.sources[channel];
          if (!(await stored(source.checkpoint_id))) {
            gone = { checkpointId: source.checkpoint_id, problem: 'missing' };
            source = undefined;
          }
        }
        if (source !== undefined) {
          sources[channel] = source;
        } else if (channel in known) {
          values[channel] = { version, value: await this.serialize(known[channel]) };
        } else if (gone !== undefined) {
          throw new MissingChannelSourceError({
            threadId: target.threadId,
            checkpointNamespace: target.namespace,
            checkpointId: target.checkpointId,
            channel,
            version,
            sourceCheckpointId: gone.checkpointId,
            problem: gone.problem,
          });
        }
      }),
    );
    return sources;
  }

  /** The value of every channel the checkpoint has a version of, where one is stored. */
  private async channelValues(
    document: CheckpointDocument,
    versions: ChannelVersions | undefined,
    lookup: Lookup,
  ): Promise<Record<string, unknown>> {
    const found: Array<readonly [string, SerializedValue, Holder]> = [];
    const elsewhere = new Map<string, Array<readonly [string, number | string]>>();
    for (const [channel, version] of Object.entries(versions ?? {})) {
      const own = document.values[channel];
      if (own !== undefined && own.version === version) {
        if (own.value !== null) found.push([channel, own.value, lookup.holder(document)]);
        continue;
      }
      const source = document.sources[channel];
      if (source === undefined || source.version !== version) continue;
      const wanted = elsewhere.get(source.checkpoint_id) ?? [];
      wanted.push([channel, version]);
      elsewhere.set(source.checkpoint_id, wanted);
    }
    // Each checkpoint holding values is read once, however many channels it holds. One that
    // is gone, or holds no longer what the pointer says, fails the read: answering without the
    // channel would let LangGraph resume with it reset (A2: never an empty value for a lost one).
    await mapConcurrently([...elsewhere], READ_CONCURRENCY, async ([checkpointId, wanted]) => {
      const holder = await lookup.checkpoint(checkpointId);
      const missing = (
        problem: MissingChannelSourceProblem,
        channel: string,
        version: number | string,
      ) =>
        new MissingChannelSourceError({
          threadId: document.thread_id,
          checkpointNamespace: document.checkpoint_ns,
          checkpointId: document.checkpoint_id,
          channel,
          version,
          sourceCheckpointId: checkpointId,
          problem,
        });
      const [firstChannel, firstVersion] = wanted[0]!;
      if (holder === null) throw missing('missing', firstChannel, firstVersion);
      if (
        holder.thread_id !== document.thread_id ||
        holder.checkpoint_ns !== document.checkpoint_ns ||
        holder.checkpoint_id !== checkpointId
      ) {
        throw missing('other-thread', firstChannel, firstVersion);
      }
      for (const [channel, version] of wanted) {
        const held = holder.values[channel];
        if (held === undefined || held.version !== version) {
          throw missing('version', channel, version);
        }
        if (held.value !== null) found.push([channel, held.value, lookup.holder(holder)]);
      }
    });
    const entries = await Promise.all(
      found.map(
        async ([channel, value, holder]) =>
          [channel, await this.deserialize(value, holder)] as const,
      ),
    );
    // In the checkpoint's channel order, whatever order the reads finished in.
    const order = Object.keys(versions ?? {});
    entries.sort((left, right) => order.indexOf(left[0]) - order.indexOf(right[0]));
    return Object.fromEntries(entries);
  }

  /** Pending writes of one checkpoint, in LangGraph's order: task path, task id, index. */
  private async storedWrites(lookup: Lookup, checkpointId: string): Promise<StoredWrite[]> {
    return (await lookup.writes(checkpointId)).sort((left, right) =>
      compareWritesSortKeys(
        writesSortKey(left.taskPath, left.taskId, left.idx),
        writesSortKey(right.taskPath, right.taskId, right.idx),
      ),
    );
  }

  /** Pending writes of one checkpoint in the document layout, one per (task, index). */
  private async documentWrites(
    ids: DocumentIds,
    placement: Placement,
    checkpointId: string,
  ): Promise<StoredWrite[]> {
    const writeIds = await this.documents.list('checkpoint-writes', ids.writesPrefix(checkpointId));
    const documents = await mapConcurrently(writeIds, READ_CONCURRENCY, (id) =>
      this.documents.read('checkpoint-writes', id, writeDocumentSchema),
    );
    // One write per (task, index), as MemorySaver keeps: of a special write (negative index)
    // the one stored last (highest order), of a regular one the one stored first (lowest).
    const unique = new Map<string, { write: StoredWrite; order: number }>();
    for (const [position, document] of documents.entries()) {
      const documentId = writeIds[position]!;
      if (
        document === null ||
        document.thread_id !== placement.threadId ||
        document.checkpoint_ns !== placement.namespace ||
        document.checkpoint_id !== checkpointId
      ) {
        continue;
      }
      for (const { order = 0, ...write } of document.writes) {
        const key = JSON.stringify([document.task_id, write.idx]);
        const best = unique.get(key);
        if (best === undefined || (write.idx < 0 ? order > best.order : order < best.order)) {
          unique.set(key, {
            write: {
              holder: { collection: 'checkpoint-writes', id: documentId },
              taskId: document.task_id,
              taskPath: document.task_path,
              ...write,
            },
            order,
          });
        }
      }
    }
    return [...unique.values()].map(({ write }) => write);
  }

  private async pendingWrites(
    lookup: Lookup,
    checkpointId: string,
  ): Promise<CheckpointPendingWrite[]> {
    const writes = await this.storedWrites(lookup, checkpointId);
    return Promise.all(
      writes.map(
        async (write) =>
          [
            write.taskId,
            write.channel,
            await this.deserialize(write.value, write.holder),
          ] as CheckpointPendingWrite,
      ),
    );
  }

  /**
   * Checkpoints of format 1 to 3 kept pending sends as writes to `TASKS` on their parent;
   * format 4 keeps them as a channel. Older checkpoints are read as format 4, as every
   * LangGraph saver does.
   */
  private async migratePendingSends(
    checkpoint: Checkpoint,
    lookup: Lookup,
    parentId: string,
  ): Promise<void> {
    const parentWrites = await this.storedWrites(lookup, parentId);
    const sends = await Promise.all(
      parentWrites
        .filter((write) => write.channel === TASKS)
        .map((write) => this.deserialize(write.value, write.holder)),
    );
    checkpoint.channel_values ??= {};
    checkpoint.channel_values[TASKS] = sends;
    checkpoint.channel_versions ??= {};
    checkpoint.channel_versions[TASKS] =
      Object.keys(checkpoint.channel_versions).length > 0
        ? maxChannelVersion(...Object.values(checkpoint.channel_versions))
        : this.getNextVersion(undefined);
  }

  /**
   * A write order above `atLeast` and above every order this instance gave: the clock in
   * units of 1/1024 ms (orders stay safe integers for millennia), so writes of one task from
   * one process are ordered, and orders from different processes roughly by time.
   */
  private nextOrder(atLeast: number): number {
    const order = Math.max(Date.now() * 1024, this.lastOrder + 1, atLeast);
    this.lastOrder = order;
    return order;
  }

  private async serialize(value: unknown): Promise<SerializedValue> {
    return toSerialized(await this.serde.dumpsTyped(value));
  }

  /** A value that does not deserialize damages the document holding it: quarantined (A2). */
  private async deserialize(value: SerializedValue, holder: Holder): Promise<unknown> {
    try {
      return await this.serde.loadsTyped(value.type, bytesOf(value));
    } catch (error) {
      const reason = `a value does not deserialize (${(error as Error).message})`;
      if ('collection' in holder) {
        return this.documents.quarantine(holder.collection, holder.id, reason);
      }
      const { thread, sequence } = holder;
      const text = await this.logs!.recordText(thread, sequence);
      const location = await this.logs!.quarantineText(thread, sequence, text, reason);
      throw new CorruptCheckpointError(
        'log',
        `${thread.sessionId}/${LOG_RUN_ID}#${sequence}`,
        location,
        reason,
      );
    }
  }
}

function sameCheckpoint(
  document: CheckpointDocument,
  placement: Placement,
  checkpointId: string,
): boolean {
  return (
    document.thread_id === placement.threadId &&
    document.checkpoint_ns === placement.namespace &&
    document.checkpoint_id === checkpointId
  );
}

function placementOf(threadId: unknown, namespace: unknown): Placement {
  if (typeof threadId !== 'string' && typeof threadId !== 'number') {
    throw new InvalidInputError('thread_id must be a string', { path: 'configurable.thread_id' });
  }
  if (typeof namespace !== 'string') {
    throw new InvalidInputError('checkpoint_ns must be a string', {
      path: 'configurable.checkpoint_ns',
    });
  }
  // LangGraph accepts numeric thread ids and stringifies them; so does the saver.
  return { threadId: String(threadId), namespace };
}

function requiredPlacement(config: RunnableConfig, operation: string): Placement {
  const threadId = config.configurable?.thread_id;
  if (threadId === undefined || threadId === null || threadId === '') {
    throw new InvalidInputError(
      `${operation}: the config names no thread_id (pass { configurable: { thread_id } })`,
      { path: 'configurable.thread_id' },
    );
  }
  return placementOf(threadId, config.configurable?.checkpoint_ns ?? '');
}

function optionalString(value: unknown, name: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'number') return String(value);
  if (typeof value !== 'string') {
    throw new InvalidInputError(`${name} must be a string`, { path: name });
  }
  return value;
}

/** A random number in [0, 0.5) with 40 bits of entropy (JSON keeps it exactly). */
function randomFraction(): number {
  return (randomInt(0, 2 ** 20) * 2 ** 20 + randomInt(0, 2 ** 20)) / 2 ** 41;
}
