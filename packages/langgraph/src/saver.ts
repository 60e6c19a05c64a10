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
import { AdapterDocuments, mapConcurrently, READ_CONCURRENCY } from './adapter-documents.js';
import { CheckpointListing } from './checkpoint-listing.js';
import { DocumentIds } from './document-ids.js';
import {
  bytesOf,
  type ChannelValueDocument,
  type CheckpointDocument,
  channelValueDocumentSchema,
  checkpointDocumentSchema,
  FORMAT_VERSION,
  type SerializedValue,
  toSerialized,
  type WriteDocument,
  writeDocumentSchema,
} from './documents.js';
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
}

/** One stored pending write, with the task that made it. */
interface StoredWrite {
  readonly taskId: string;
  readonly taskPath: string;
  readonly idx: number;
  readonly channel: string;
  readonly value: SerializedValue;
}

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
 * A `put` writes the values of the channels in `newVersions` first, then the checkpoint:
 * once `put` resolves, the checkpoint and everything it names are stored; a crash before
 * that leaves at most channel values no checkpoint names, never a checkpoint that names a
 * missing value.
 */
export class KeepsakeSaver extends BaseCheckpointSaver {
  readonly adapter: StorageAdapter;
  private readonly documents: AdapterDocuments;
  private readonly listing: CheckpointListing;
  private opening: Promise<void> | null;

  constructor(options: KeepsakeSaverOptions) {
    super(options.serde);
    this.adapter = options.adapter;
    this.documents = new AdapterDocuments(options.adapter, options.durable ?? true);
    this.listing = new CheckpointListing(this.documents);
    this.opening = options.adapterOpened === true ? Promise.resolve() : null;
  }

  /**
   * Channel versions are the next integer plus a random fraction below one half, so two
   * branches forked from one checkpoint never write the same version of a channel with
   * different values (a channel value is stored once per version and shared by the
   * checkpoints that have it). They stay numbers and increase, as LangGraph requires.
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
    return document === null ? undefined : this.toTuple(document);
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
    const entries = await this.listing.entries(threadId, namespace);
    let remaining = limit ?? Number.POSITIVE_INFINITY;
    if (remaining <= 0) return;
    const candidates = entries.filter(
      (entry) =>
        (onlyId === undefined || entry.checkpointId === onlyId) &&
        (beforeId === undefined || entry.checkpointId < beforeId),
    );
    // Documents are read a few at a time ahead of the consumer, newest first.
    for (let start = 0; start < candidates.length && remaining > 0; start += READ_CONCURRENCY) {
      const batch = candidates.slice(start, start + READ_CONCURRENCY);
      const documents = await mapConcurrently(batch, READ_CONCURRENCY, (entry) =>
        this.listing.document(entry),
      );
      for (const document of documents) {
        if (remaining <= 0) return;
        if (document === null) continue;
        if (threadId !== undefined && document.thread_id !== threadId) continue;
        if (namespace !== undefined && document.checkpoint_ns !== namespace) continue;
        if (filter !== undefined) {
          const metadata = await this.deserialize(document.metadata);
          if (!metadataMatches(metadata, filter)) continue;
        }
        remaining--;
        yield await this.toTuple(document);
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
    const values: Record<string, unknown> = prepared.channel_values;
    prepared.channel_values = {};
    // The values first: a stored checkpoint never names a value that is not stored.
    await mapConcurrently(
      Object.entries(newVersions),
      READ_CONCURRENCY,
      async ([channel, version]) => {
        const document: ChannelValueDocument = {
          keepsake: 'langgraph-channel-value',
          v: FORMAT_VERSION,
          thread_id: placement.threadId,
          checkpoint_ns: placement.namespace,
          channel,
          version,
          value: channel in values ? await this.serialize(values[channel]) : null,
        };
        // Immutable once written: the first write of a version wins (a retry writes the same).
        await this.documents.create(
          'checkpoints',
          ids.channelValue(channel, version),
          JSON.stringify(document),
        );
      },
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
    };
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
    const document: WriteDocument = {
      keepsake: 'langgraph-writes',
      v: FORMAT_VERSION,
      thread_id: placement.threadId,
      checkpoint_ns: placement.namespace,
      checkpoint_id: checkpointId,
      task_id: taskId,
      task_path: taskPath,
      writes: indexed,
    };
    // One document per call, named by its first index: all of a task's writes or none (B1).
    const id = ids.write(checkpointId, taskId, indexed[0]!.idx);
    const special = indexed.some((write) => write.idx < 0);
    // A special write replaces the one before (a new error, a new interrupt); regular writes
    // keep what was stored first (a retried task writes the same again).
    if (special) await this.documents.replace('checkpoint-writes', id, JSON.stringify(document));
    else await this.documents.create('checkpoint-writes', id, JSON.stringify(document));
  }

  /**
   * Deletes every checkpoint, channel value and pending write of the thread, checkpoints
   * first: a crash part-way leaves only documents no checkpoint names, which the next
   * `deleteThread` removes.
   */
  async deleteThread(threadId: string): Promise<void> {
    const thread = placementOf(threadId, '').threadId;
    await this.ready();
    const prefix = DocumentIds.threadPrefix(thread);
    const [stored, writes] = await Promise.all([
      this.documents.list('checkpoints', prefix),
      this.documents.list('checkpoint-writes', prefix),
    ]);
    const checkpoints = stored.filter((id) => id.split('.').length === 3);
    const values = stored.filter((id) => id.split('.').length !== 3);
    for (const [collection, group] of [
      ['checkpoints', checkpoints],
      ['checkpoint-writes', writes],
      ['checkpoints', values],
    ] as const) {
      await mapConcurrently(group, READ_CONCURRENCY, (id) => this.documents.delete(collection, id));
    }
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

  private async toTuple(document: CheckpointDocument): Promise<CheckpointTuple> {
    const placement = { threadId: document.thread_id, namespace: document.checkpoint_ns };
    const ids = new DocumentIds(placement.threadId, placement.namespace);
    const [checkpoint, metadata, pendingWrites] = await Promise.all([
      this.deserialize(document.checkpoint) as Promise<Checkpoint>,
      this.deserialize(document.metadata) as Promise<CheckpointMetadata>,
      this.pendingWrites(ids, placement, document.checkpoint_id),
    ]);
    checkpoint.channel_values = await this.channelValues(
      ids,
      placement,
      checkpoint.channel_versions,
    );
    const parentId = document.parent_checkpoint_id;
    if (checkpoint.v < 4 && parentId !== null) {
      await this.migratePendingSends(checkpoint, ids, placement, parentId);
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

  /** The value of every channel the checkpoint has a version of, where one is stored. */
  private async channelValues(
    ids: DocumentIds,
    placement: Placement,
    versions: ChannelVersions | undefined,
  ): Promise<Record<string, unknown>> {
    const entries = Object.entries(versions ?? {});
    const loaded = await mapConcurrently(entries, READ_CONCURRENCY, async ([channel, version]) => {
      const document = await this.documents.read(
        'checkpoints',
        ids.channelValue(channel, version),
        channelValueDocumentSchema,
      );
      if (
        document === null ||
        document.value === null ||
        document.thread_id !== placement.threadId ||
        document.checkpoint_ns !== placement.namespace ||
        document.channel !== channel ||
        document.version !== version
      ) {
        return null;
      }
      return [channel, await this.deserialize(document.value)] as const;
    });
    return Object.fromEntries(loaded.filter((entry) => entry !== null));
  }

  /** Pending writes of one checkpoint, in LangGraph's order: task path, task id, index. */
  private async storedWrites(
    ids: DocumentIds,
    placement: Placement,
    checkpointId: string,
  ): Promise<StoredWrite[]> {
    const writeIds = await this.documents.list('checkpoint-writes', ids.writesPrefix(checkpointId));
    const documents = await mapConcurrently(writeIds, READ_CONCURRENCY, (id) =>
      this.documents.read('checkpoint-writes', id, writeDocumentSchema),
    );
    // One (task, index) once: a special write replaced in one document is not read twice.
    const unique = new Map<string, StoredWrite>();
    for (const document of documents) {
      if (
        document === null ||
        document.thread_id !== placement.threadId ||
        document.checkpoint_ns !== placement.namespace ||
        document.checkpoint_id !== checkpointId
      ) {
        continue;
      }
      for (const write of document.writes) {
        const key = JSON.stringify([document.task_id, write.idx]);
        if (!unique.has(key)) {
          unique.set(key, { taskId: document.task_id, taskPath: document.task_path, ...write });
        }
      }
    }
    return [...unique.values()].sort((left, right) =>
      compareWritesSortKeys(
        writesSortKey(left.taskPath, left.taskId, left.idx),
        writesSortKey(right.taskPath, right.taskId, right.idx),
      ),
    );
  }

  private async pendingWrites(
    ids: DocumentIds,
    placement: Placement,
    checkpointId: string,
  ): Promise<CheckpointPendingWrite[]> {
    const writes = await this.storedWrites(ids, placement, checkpointId);
    return Promise.all(
      writes.map(
        async (write) =>
          [
            write.taskId,
            write.channel,
            await this.deserialize(write.value),
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
    ids: DocumentIds,
    placement: Placement,
    parentId: string,
  ): Promise<void> {
    const parentWrites = await this.storedWrites(ids, placement, parentId);
    const sends = await Promise.all(
      parentWrites
        .filter((write) => write.channel === TASKS)
        .map((write) => this.deserialize(write.value)),
    );
    checkpoint.channel_values ??= {};
    checkpoint.channel_values[TASKS] = sends;
    checkpoint.channel_versions ??= {};
    checkpoint.channel_versions[TASKS] =
      Object.keys(checkpoint.channel_versions).length > 0
        ? maxChannelVersion(...Object.values(checkpoint.channel_versions))
        : this.getNextVersion(undefined);
  }

  private async serialize(value: unknown): Promise<SerializedValue> {
    return toSerialized(await this.serde.dumpsTyped(value));
  }

  private deserialize(value: SerializedValue): Promise<unknown> {
    return this.serde.loadsTyped(value.type, bytesOf(value));
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
