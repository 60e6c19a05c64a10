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
import { DocumentIds } from './document-ids.js';
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
  MissingChannelSourceError,
  type MissingChannelSourceProblem,
} from './errors.js';
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
  readonly documentId: string;
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

/** The document a serialized value came from, quarantined when the value is damaged. */
interface Holder {
  readonly collection: 'checkpoints' | 'checkpoint-writes';
  readonly id: string;
}

function checkpointHolder(document: CheckpointDocument): Holder {
  const ids = new DocumentIds(document.thread_id, document.checkpoint_ns);
  return { collection: 'checkpoints', id: ids.checkpoint(document.checkpoint_id) };
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

  constructor(options: KeepsakeSaverOptions) {
    super(options.serde);
    this.adapter = options.adapter;
    this.documents = new AdapterDocuments(options.adapter, options.durable ?? true);
    this.listing = new CheckpointListing(this.documents);
    this.opening = options.adapterOpened === true ? Promise.resolve() : null;
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
          const metadata = await this.deserialize(document.metadata, checkpointHolder(document));
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
    const sources = await this.sourcesOf(
      { ...placement, checkpointId: checkpoint.id },
      parentId,
      prepared.channel_versions,
      values,
      channelValues,
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
    const prefix = DocumentIds.threadPrefix(thread);
    for (const collection of ['checkpoints', 'checkpoint-writes'] as const) {
      const ids = await this.documents.list(collection, prefix);
      await mapConcurrently(ids, READ_CONCURRENCY, (id) => this.documents.delete(collection, id));
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
      this.deserialize(document.checkpoint, checkpointHolder(document)) as Promise<Checkpoint>,
      this.deserialize(
        document.metadata,
        checkpointHolder(document),
      ) as Promise<CheckpointMetadata>,
      this.pendingWrites(ids, placement, document.checkpoint_id),
    ]);
    checkpoint.channel_values = await this.channelValues(
      ids,
      document,
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
  ): Promise<CheckpointDocument['sources']> {
    const sources: CheckpointDocument['sources'] = {};
    const unchanged = Object.entries(versions ?? {}).filter(([channel]) => !(channel in values));
    if (unchanged.length === 0 || parentId === undefined) return sources;
    const ids = new DocumentIds(target.threadId, target.namespace);
    const parent = await this.documents.read(
      'checkpoints',
      ids.checkpoint(parentId),
      checkpointDocumentSchema,
    );
    const parentHere = parent !== null && sameCheckpoint(parent, target, parentId);
    // Each pointed-at checkpoint is checked once, however many channels it holds.
    const pointedAt = new Map<string, Promise<boolean>>();
    const stored = (checkpointId: string) => {
      let found = pointedAt.get(checkpointId);
      if (found === undefined) {
        found = this.documents.exists('checkpoints', ids.checkpoint(checkpointId));
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
    ids: DocumentIds,
    document: CheckpointDocument,
    versions: ChannelVersions | undefined,
  ): Promise<Record<string, unknown>> {
    const found: Array<readonly [string, SerializedValue, Holder]> = [];
    const elsewhere = new Map<string, Array<readonly [string, number | string]>>();
    for (const [channel, version] of Object.entries(versions ?? {})) {
      const own = document.values[channel];
      if (own !== undefined && own.version === version) {
        if (own.value !== null) found.push([channel, own.value, checkpointHolder(document)]);
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
      const holder = await this.documents.read(
        'checkpoints',
        ids.checkpoint(checkpointId),
        checkpointDocumentSchema,
      );
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
        if (held.value !== null) found.push([channel, held.value, checkpointHolder(holder)]);
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
  private async storedWrites(
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
              documentId,
              taskId: document.task_id,
              taskPath: document.task_path,
              ...write,
            },
            order,
          });
        }
      }
    }
    return [...unique.values()]
      .map(({ write }) => write)
      .sort((left, right) =>
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
            await this.deserialize(write.value, {
              collection: 'checkpoint-writes',
              id: write.documentId,
            }),
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
        .map((write) =>
          this.deserialize(write.value, { collection: 'checkpoint-writes', id: write.documentId }),
        ),
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
      return this.documents.quarantine(
        holder.collection,
        holder.id,
        `a value does not deserialize (${(error as Error).message})`,
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
