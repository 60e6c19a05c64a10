import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  createMemoryBackend,
  InvalidInputError,
  type MemoryBackend,
  memoryAdapter,
  type StorageAdapter,
} from '@keepsake/core';
import { fsAdapter } from '@keepsake/fs';
import {
  type Checkpoint,
  type CheckpointTuple,
  emptyCheckpoint,
  uuid6,
} from '@langchain/langgraph-checkpoint';
import { afterEach, describe, expect, it } from 'vitest';
import { CorruptCheckpointError, KeepsakeSaver } from '../src/index.js';

const metadata = { source: 'loop' as const, step: 0, parents: {} };

function checkpointWith(
  values: Record<string, unknown>,
  versions: Record<string, number>,
): Checkpoint {
  return {
    ...emptyCheckpoint(),
    id: uuid6(-1),
    channel_values: values,
    channel_versions: versions,
  };
}

async function all(saver: KeepsakeSaver, config: object): Promise<CheckpointTuple[]> {
  const tuples: CheckpointTuple[] = [];
  for await (const tuple of saver.list({ configurable: config })) tuples.push(tuple);
  return tuples;
}

async function listIds(adapter: StorageAdapter, collection: 'checkpoints' | 'checkpoint-writes') {
  return (await adapter.listDocuments(collection, { cursor: null, limit: 1000 })).ids;
}

describe('KeepsakeSaver', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });

  // These tests look at the stored documents: they pin the document layout (threads stored
  // before 0.2, or with `layout: 'documents'`); log.test.ts covers the log layout.
  function memorySavers(count: number): { backend: MemoryBackend; savers: KeepsakeSaver[] } {
    const backend = createMemoryBackend();
    const savers = Array.from(
      { length: count },
      () => new KeepsakeSaver({ adapter: memoryAdapter({ backend }), layout: 'documents' }),
    );
    return { backend, savers };
  }

  it('B4: two instances putting checkpoints of one thread at once lose neither', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'keepsake-langgraph-two-'));
    const savers = [0, 1].map(() => new KeepsakeSaver({ adapter: fsAdapter({ directory }) }));
    cleanups.push(async () => {
      for (const saver of savers) await saver.close();
      await rm(directory, { recursive: true, force: true });
    });
    const config = { configurable: { thread_id: 'shared', checkpoint_ns: '' } };
    const put = async (saver: KeepsakeSaver, index: number) => {
      const checkpoint = checkpointWith({ messages: [`from ${index}`] }, { messages: index + 1 });
      await saver.put(config, checkpoint, { ...metadata, step: index }, { messages: index + 1 });
      return checkpoint.id;
    };
    const ids = await Promise.all(
      Array.from({ length: 40 }, (_, index) => put(savers[index % 2]!, index)),
    );
    const listed = await all(savers[0]!, { thread_id: 'shared' });
    expect(listed.map((tuple) => tuple.checkpoint.id).sort()).toEqual([...ids].sort());
    // Newest first, by checkpoint id.
    expect(listed.map((tuple) => tuple.checkpoint.id)).toEqual([...ids].sort().reverse());
    // The same checkpoint put by both at once: one whole version wins, nothing torn.
    const same = checkpointWith({}, {});
    await Promise.all(
      savers.map((saver, index) => saver.put(config, same, { ...metadata, step: 100 + index }, {})),
    );
    const stored = await savers[1]!.getTuple({
      configurable: { ...config.configurable, checkpoint_id: same.id },
    });
    expect([100, 101]).toContain(stored?.metadata?.step);
  });

  it('A2: a damaged checkpoint is quarantined with its bytes, and the one before it is read next', async () => {
    const { backend, savers } = memorySavers(1);
    const saver = savers[0]!;
    const config = { configurable: { thread_id: 't', checkpoint_ns: '' } };
    const first = checkpointWith({ a: 1 }, { a: 1 });
    const firstConfig = await saver.put(config, first, metadata, { a: 1 });
    const second = checkpointWith({ a: 2 }, { a: 2 });
    await saver.put(firstConfig, second, { ...metadata, step: 1 }, { a: 2 });
    const raw = memoryAdapter({ backend });
    const [damagedId] = (await listIds(raw, 'checkpoints')).filter(
      (id) => id.split('.').length === 3 && id.endsWith(second.id),
    );
    expect(damagedId).toBeDefined();
    await raw.putDocument(
      'checkpoints',
      damagedId!,
      { kind: 'full', revision: 2, text: '{"torn' },
      {
        expectedRevision: 1,
        durable: true,
      },
    );
    const error = await saver.getTuple(config).catch((caught: unknown) => caught);
    expect(CorruptCheckpointError.isInstance(error), String(error)).toBe(true);
    const [quarantined] = await raw.listQuarantined();
    expect(quarantined).toMatchObject({ collection: 'checkpoints', id: damagedId });
    expect(await raw.readQuarantined!(quarantined!.location)).toBe('{"torn');
    // Never deleted in place of the quarantine: the newest readable checkpoint answers now.
    expect((await saver.getTuple(config))?.checkpoint).toEqual(first);
  });

  it('A2: damaged pending writes, and a damaged checkpoint holding a value, are quarantined, not deleted', async () => {
    const { backend, savers } = memorySavers(1);
    const saver = savers[0]!;
    const first = await saver.put(
      { configurable: { thread_id: 't' } },
      checkpointWith({ a: 1 }, { a: 1 }),
      metadata,
      { a: 1 },
    );
    // The second checkpoint does not write `a`: it points at the first for its value.
    const second = await saver.put(first, checkpointWith({ a: 1 }, { a: 1 }), metadata, {});
    await saver.putWrites(second, [['a', 2]], 'task-1');
    expect((await saver.getTuple(second))?.checkpoint.channel_values).toEqual({ a: 1 });
    const raw = memoryAdapter({ backend });
    const firstId = (await listIds(raw, 'checkpoints')).find((id) =>
      id.endsWith(String(first.configurable?.checkpoint_id)),
    );
    const [writesId] = await listIds(raw, 'checkpoint-writes');
    for (const [collection, id] of [
      ['checkpoint-writes', writesId],
      ['checkpoints', firstId],
    ] as const) {
      await raw.putDocument(
        collection,
        id!,
        { kind: 'full', revision: 2, text: '[]' },
        {
          expectedRevision: 1,
          durable: true,
        },
      );
      const error = await saver.getTuple(second).catch((caught: unknown) => caught);
      expect(CorruptCheckpointError.isInstance(error), `${collection}: ${error}`).toBe(true);
      expect((error as CorruptCheckpointError).collection).toBe(collection);
    }
    expect((await raw.listQuarantined()).map((entry) => entry.id)).toEqual([writesId, firstId]);
  });

  it('A2: a document whose serialized value does not deserialize is quarantined', async () => {
    const { backend, savers } = memorySavers(1);
    const saver = savers[0]!;
    const stored = await saver.put(
      { configurable: { thread_id: 't' } },
      checkpointWith({ a: 1 }, { a: 1 }),
      metadata,
      { a: 1 },
    );
    const raw = memoryAdapter({ backend });
    const [id] = await listIds(raw, 'checkpoints');
    const document = JSON.parse((await raw.getDocument('checkpoints', id!))!.base);
    document.checkpoint.data = Buffer.from('{not json').toString('base64');
    await raw.putDocument(
      'checkpoints',
      id!,
      { kind: 'full', revision: 2, text: JSON.stringify(document) },
      { expectedRevision: 1, durable: true },
    );
    const error = await saver.getTuple(stored).catch((caught: unknown) => caught);
    expect(CorruptCheckpointError.isInstance(error), String(error)).toBe(true);
    expect((await raw.listQuarantined()).map((entry) => entry.id)).toEqual([id]);
    expect(await saver.getTuple(stored)).toBeUndefined();
  });

  it('A1: any thread id, namespace and checkpoint id is stored apart (escaped or hashed), binary values intact', async () => {
    const { backend, savers } = memorySavers(1);
    const saver = savers[0]!;
    const threads = [
      'plain-uuid-like',
      'user@example.com',
      'a.b',
      'ü/../x',
      `long-${'x'.repeat(500)}`,
      'lone \ud800',
    ];
    const namespaces = ['', 'child:1ef4f797-8335-6428-8001-8a1503f9b875', 'a|b'];
    const bytes = new Uint8Array([0, 255, 10, 13, 0xfe]);
    for (const thread_id of threads) {
      for (const checkpoint_ns of namespaces) {
        const checkpoint = checkpointWith(
          { blob: bytes, text: `${thread_id}/${checkpoint_ns}` },
          { blob: 1, text: 1 },
        );
        checkpoint.id = `${uuid6(-1)}${checkpoint_ns.length > 10 ? '-with-a-long-suffix-beyond-36' : ''}`;
        const stored = await saver.put(
          { configurable: { thread_id, checkpoint_ns } },
          checkpoint,
          metadata,
          { blob: 1, text: 1 },
        );
        await saver.putWrites(stored, [['text', 'written']], `task ${thread_id}`);
        const read = await saver.getTuple({ configurable: { thread_id, checkpoint_ns } });
        expect(read?.checkpoint, `${thread_id}/${checkpoint_ns}`).toEqual(checkpoint);
        expect(read?.pendingWrites).toEqual([[`task ${thread_id}`, 'text', 'written']]);
      }
    }
    for (const thread_id of threads) {
      const tuples = await all(saver, { thread_id });
      expect(tuples.map((tuple) => tuple.config.configurable?.checkpoint_ns).sort()).toEqual(
        [...namespaces].sort(),
      );
    }
    // deleteThread removes exactly one thread's documents.
    await saver.deleteThread(threads[4]!);
    expect(await all(saver, { thread_id: threads[4] })).toEqual([]);
    expect(await all(saver, { thread_id: threads[0] })).toHaveLength(namespaces.length);
    const raw = memoryAdapter({ backend });
    const remaining = (await listIds(raw, 'checkpoints')).length;
    expect((await listIds(raw, 'checkpoint-writes')).length).toBeGreaterThan(0);
    await Promise.all(threads.map((thread) => saver.deleteThread(thread)));
    expect(remaining).toBeGreaterThan(0);
    expect(await listIds(raw, 'checkpoints')).toEqual([]);
    expect(await listIds(raw, 'checkpoint-writes')).toEqual([]);
  });

  it('writes an unchanged channel once: a later checkpoint points at the one that holds it', async () => {
    const { backend, savers } = memorySavers(1);
    const saver = savers[0]!;
    const big = 'x'.repeat(10_000);
    let config: Parameters<KeepsakeSaver['put']>[0] = { configurable: { thread_id: 't' } };
    config = await saver.put(
      config,
      checkpointWith({ history: big, step: 0 }, { history: 1, step: 1 }),
      metadata,
      { history: 1, step: 1 },
    );
    for (let step = 1; step <= 5; step++) {
      config = await saver.put(
        config,
        checkpointWith({ history: big, step }, { history: 1, step: step + 1 }),
        metadata,
        { step: step + 1 },
      );
    }
    const raw = memoryAdapter({ backend });
    const sizes = await Promise.all(
      (await listIds(raw, 'checkpoints')).map(
        async (id) => (await raw.getDocument('checkpoints', id))!.base.length,
      ),
    );
    expect(sizes.filter((size) => size > big.length)).toHaveLength(1);
    expect((await saver.getTuple(config))?.checkpoint.channel_values).toEqual({
      history: big,
      step: 5,
    });
  });

  it("B1: one putWrites call is one document: a task's writes are stored all or none", async () => {
    const { backend, savers } = memorySavers(1);
    const saver = savers[0]!;
    const stored = await saver.put(
      { configurable: { thread_id: 't' } },
      checkpointWith({}, {}),
      metadata,
      {},
    );
    await saver.putWrites(
      stored,
      [
        ['a', 1],
        ['b', 2],
        ['c', 3],
      ],
      'task',
    );
    // A retried task writes again: the first stored writes stay.
    await saver.putWrites(
      stored,
      [
        ['a', 9],
        ['b', 9],
        ['c', 9],
      ],
      'task',
    );
    expect(await listIds(memoryAdapter({ backend }), 'checkpoint-writes')).toHaveLength(1);
    expect((await saver.getTuple(stored))?.pendingWrites).toEqual([
      ['task', 'a', 1],
      ['task', 'b', 2],
      ['task', 'c', 3],
    ]);
  });

  it('refuses a put or putWrites without a thread id, typed', async () => {
    const saver = new KeepsakeSaver({ adapter: memoryAdapter() });
    const checkpoint = checkpointWith({}, {});
    const errors = await Promise.all([
      saver.put({ configurable: {} }, checkpoint, metadata, {}).catch((error: unknown) => error),
      saver.put({}, checkpoint, metadata, {}).catch((error: unknown) => error),
      saver
        .putWrites({ configurable: { checkpoint_id: 'x' } }, [], 'task')
        .catch((error: unknown) => error),
    ]);
    for (const error of errors)
      expect(InvalidInputError.isInstance(error), String(error)).toBe(true);
  });

  it('B3: with durable: false nothing waits for a flush; flush() makes it durable', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'keepsake-langgraph-lazy-'));
    const saver = new KeepsakeSaver({ adapter: fsAdapter({ directory }), durable: false });
    cleanups.push(async () => {
      await saver.close();
      await rm(directory, { recursive: true, force: true });
    });
    const checkpoint = checkpointWith({ a: 1 }, { a: 1 });
    const config = await saver.put({ configurable: { thread_id: 't' } }, checkpoint, metadata, {
      a: 1,
    });
    await saver.flush();
    expect((await saver.getTuple(config))?.checkpoint).toEqual(checkpoint);
  });

  it('getNextVersion increases and differs between two calls from one version (forks never share a value)', () => {
    const saver = new KeepsakeSaver({ adapter: memoryAdapter() });
    const first = saver.getNextVersion(undefined);
    const [left, right] = [saver.getNextVersion(first), saver.getNextVersion(first)];
    expect(first).toBeGreaterThanOrEqual(1);
    expect(first).toBeLessThan(2);
    expect(left).toBeGreaterThan(first);
    expect(Math.floor(left)).toBe(2);
    expect(left).not.toBe(right);
  });
});
