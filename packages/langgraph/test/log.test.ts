import { createMemoryBackend, memoryAdapter, type StorageAdapter } from '@keepsake/core';
import type { RunnableConfig } from '@langchain/core/runnables';
import {
  type Checkpoint,
  type CheckpointTuple,
  emptyCheckpoint,
  uuid6,
} from '@langchain/langgraph-checkpoint';
import { afterEach, describe, expect, it } from 'vitest';
import { CorruptCheckpointError, KeepsakeSaver, MissingChannelSourceError } from '../src/index.js';
import { LOG_RUN_ID, logSessionId, SEGMENT_RECORDS, segmentRunId } from '../src/log-store.js';
import { backends } from './backends.js';

// The log layout (the default since 0.2): a thread's checkpoints and pending writes are
// records of one append-only log, the adapter's run journal primitives (E2, E3).

const metadata = (step: number) => ({ source: 'loop' as const, step, parents: {} });

async function allTuples(saver: KeepsakeSaver, config: object): Promise<CheckpointTuple[]> {
  const tuples: CheckpointTuple[] = [];
  for await (const tuple of saver.list({ configurable: config })) tuples.push(tuple);
  return tuples;
}

/** `count` checkpoints: the first writes `profile`, every one writes `counter`. */
async function steps(saver: KeepsakeSaver, threadId: string, count: number) {
  let config: RunnableConfig = { configurable: { thread_id: threadId, checkpoint_ns: '' } };
  const checkpoints: Checkpoint[] = [];
  let versions: Record<string, number> = {};
  for (let step = 0; step < count; step++) {
    const newVersions: Record<string, number> = {};
    const values: Record<string, unknown> = {};
    if (step === 0) {
      newVersions.profile = saver.getNextVersion(undefined);
      values.profile = { name: 'Ada' };
    }
    newVersions.counter = saver.getNextVersion(versions.counter);
    values.counter = step;
    versions = { ...versions, ...newVersions };
    const checkpoint: Checkpoint = {
      ...emptyCheckpoint(),
      id: uuid6(-1),
      channel_values: values,
      channel_versions: versions,
    };
    config = await saver.put(config, checkpoint, metadata(step), newVersions);
    await saver.putWrites(config, [['counter', step + 1]], `task-${step}`);
    checkpoints.push(checkpoint);
  }
  return { checkpoints, config };
}

/** Appends a record of the thread's log as a damaged disk or a foreign writer would. */
async function appendRaw(adapter: StorageAdapter, threadId: string, text: string) {
  const sessionId = logSessionId(threadId);
  const read = await adapter.readLog(sessionId, LOG_RUN_ID, { afterSequence: 0, limit: 10_000 });
  const sequence = (read.records.at(-1)?.sequence ?? 0) + 1;
  const result = await adapter.appendLog(sessionId, LOG_RUN_ID, [{ sequence, text }], {
    durability: 'each',
  });
  expect(result.ok).toBe(true);
  return { sequence, records: read.records };
}

for (const backend of backends) {
  describe(`log layout (${backend.name})`, () => {
    const disposals: Array<() => Promise<void>> = [];
    afterEach(async () => {
      for (const dispose of disposals.splice(0)) await dispose();
    });

    async function fresh() {
      const { adapter, dispose } = await backend.create();
      disposals.push(dispose);
      return new KeepsakeSaver({ adapter });
    }

    it('E2: a step is one append to the thread log, and no document besides its marker', async () => {
      const saver = await fresh();
      const { checkpoints } = await steps(saver, 'log-thread', 3);
      const read = await saver.adapter.readLog(logSessionId('log-thread'), LOG_RUN_ID, {
        afterSequence: 0,
        limit: 100,
      });
      // Three puts and three putWrites: six records, each with its checksum.
      expect(read.records.map((record) => record.sequence)).toEqual([1, 2, 3, 4, 5, 6]);
      expect(read.records.every((record) => /^[0-9a-f]{8} \{/.test(record.text))).toBe(true);
      const { ids } = await saver.adapter.listDocuments('checkpoints', {
        cursor: null,
        limit: 100,
      });
      expect(ids).toEqual(['log-thread']);
      const latest = await saver.getTuple({ configurable: { thread_id: 'log-thread' } });
      expect(latest?.checkpoint.id).toBe(checkpoints[2]!.id);
      expect(latest?.checkpoint.channel_values).toEqual({ profile: { name: 'Ada' }, counter: 2 });
      expect(latest?.pendingWrites).toEqual([['task-2', 'counter', 3]]);
    });

    it('A2: a record whose checksum fails is quarantined with its bytes and reported, never skipped silently', async () => {
      const saver = await fresh();
      const { checkpoints } = await steps(saver, 'damaged', 2);
      const { records } = await appendRaw(saver.adapter, 'damaged', 'x');
      // A copy of the last checkpoint's record with one byte changed: the checksum catches it.
      const good = records.find((record) => record.text.includes(checkpoints[1]!.id))!.text;
      const bad = good.replace('"counter"', '"counteR"');
      const { sequence } = await appendRaw(saver.adapter, 'damaged', bad);
      // Another instance reads the log: the first read throws typed, the bytes are kept.
      const reader = new KeepsakeSaver({ adapter: saver.adapter, adapterOpened: true });
      const config = { configurable: { thread_id: 'damaged' } };
      const error = await reader.getTuple(config).catch((caught: unknown) => caught);
      expect(CorruptCheckpointError.isInstance(error)).toBe(true);
      const quarantined = await saver.adapter.listQuarantined();
      expect(quarantined).toHaveLength(1);
      if (saver.adapter.readQuarantined !== undefined) {
        expect(await saver.adapter.readQuarantined(quarantined[0]!.location)).toBe('x');
      }
      // The next read throws again for the second damaged record, then answers.
      const second = await reader.getTuple(config).catch((caught: unknown) => caught);
      expect(CorruptCheckpointError.isInstance(second)).toBe(true);
      const locations = (await saver.adapter.listQuarantined()).map((entry) => entry.location);
      expect(locations).toHaveLength(2);
      if (saver.adapter.readQuarantined !== undefined) {
        const texts = await Promise.all(
          locations.map((location) => saver.adapter.readQuarantined!(location)),
        );
        expect(texts).toContain(bad);
      }
      expect((await reader.getTuple(config))?.checkpoint.id).toBe(checkpoints[1]!.id);
      // The q records tell every instance, the writer too, to skip them from now on.
      const third = new KeepsakeSaver({ adapter: saver.adapter, adapterOpened: true });
      expect((await third.getTuple(config))?.checkpoint.id).toBe(checkpoints[1]!.id);
      expect((await saver.getTuple(config))?.checkpoint.id).toBe(checkpoints[1]!.id);
      expect(sequence).toBeGreaterThan(0);
    });

    it('A2: a record holding a value that does not deserialize is quarantined; a checkpoint reading it fails typed', async () => {
      const saver = await fresh();
      const config = { configurable: { thread_id: 'undecodable' } };
      await steps(saver, 'undecodable', 1);
      const read = await saver.adapter.readLog(logSessionId('undecodable'), LOG_RUN_ID, {
        afterSequence: 0,
        limit: 10,
      });
      const record = JSON.parse(read.records[0]!.text.slice(9));
      record.d.checkpoint_id = uuid6(-1);
      record.d.values.profile.value.data = Buffer.from('{not json').toString('base64');
      const { crc32 } = await import('node:zlib');
      const json = JSON.stringify(record);
      await appendRaw(
        saver.adapter,
        'undecodable',
        `${crc32(json).toString(16).padStart(8, '0')} ${json}`,
      );
      const reader = new KeepsakeSaver({ adapter: saver.adapter, adapterOpened: true });
      const error = await reader.getTuple(config).catch((caught: unknown) => caught);
      expect(CorruptCheckpointError.isInstance(error)).toBe(true);
      expect(await saver.adapter.listQuarantined()).toHaveLength(1);
      // The damaged checkpoint is gone from every instance's reads; the first one answers.
      expect((await reader.getTuple(config))?.metadata?.step).toBe(0);
      expect((await allTuples(saver, { thread_id: 'undecodable' })).length).toBe(1);
    });

    it('A2: a checkpoint whose channel source record was quarantined fails typed, never drops the channel', async () => {
      const saver = await fresh();
      const { checkpoints } = await steps(saver, 'source', 2);
      const reader = new KeepsakeSaver({ adapter: saver.adapter, adapterOpened: true });
      const first = await reader.getTuple({
        configurable: { thread_id: 'source', checkpoint_ns: '', checkpoint_id: checkpoints[0]!.id },
      });
      expect(first?.checkpoint.channel_values).toEqual({ profile: { name: 'Ada' }, counter: 0 });
      // The first checkpoint's record quarantined (as a read whose value did not deserialize
      // leaves it): the second reads `profile` from it.
      const json = JSON.stringify({ k: 'q', sequence: 1, location: 'elsewhere' });
      const { crc32 } = await import('node:zlib');
      await appendRaw(
        saver.adapter,
        'source',
        `${crc32(json).toString(16).padStart(8, '0')} ${json}`,
      );
      for (const instance of [reader, saver]) {
        const latest = await instance
          .getTuple({ configurable: { thread_id: 'source' } })
          .catch((caught: unknown) => caught);
        expect(MissingChannelSourceError.isInstance(latest)).toBe(true);
        const listed = await allTuples(instance, { thread_id: 'source' }).catch(
          (caught: unknown) => caught,
        );
        expect(MissingChannelSourceError.isInstance(listed)).toBe(true);
      }
    });

    it('B4: two instances appending to one thread at once lose nothing', async () => {
      const saver = await fresh();
      const other = new KeepsakeSaver({ adapter: saver.adapter, adapterOpened: true });
      await Promise.all([steps(saver, 'shared', 8), steps(other, 'shared', 8)]);
      const third = new KeepsakeSaver({ adapter: saver.adapter, adapterOpened: true });
      expect(await allTuples(third, { thread_id: 'shared' })).toHaveLength(16);
      expect(await allTuples(saver, { thread_id: 'shared' })).toHaveLength(16);
    });

    it('E2: a log longer than one journal goes on in the next; two writers across the boundary lose nothing', async () => {
      const saver = await fresh();
      const other = new KeepsakeSaver({ adapter: saver.adapter, adapterOpened: true });
      const reader = new KeepsakeSaver({ adapter: saver.adapter, adapterOpened: true });
      // The reader reads the log once while it is short, then catches up across the boundary.
      await steps(saver, 'long', 2);
      expect(await allTuples(reader, { thread_id: 'long' })).toHaveLength(2);
      const each = Math.ceil(SEGMENT_RECORDS / 4) + 4;
      await Promise.all([steps(saver, 'long', each), steps(other, 'long', each)]);
      const total = 2 + 2 * each;
      expect(2 * total).toBeGreaterThan(SEGMENT_RECORDS);
      expect(await saver.adapter.listLogs(logSessionId('long'))).toEqual(
        expect.arrayContaining([segmentRunId(0), segmentRunId(1)]),
      );
      const first = await saver.adapter.readLog(logSessionId('long'), segmentRunId(0), {
        afterSequence: 0,
        limit: 10_000,
      });
      expect(first.records).toHaveLength(SEGMENT_RECORDS);
      const fresh2 = new KeepsakeSaver({ adapter: saver.adapter, adapterOpened: true });
      for (const instance of [reader, fresh2, saver, other]) {
        expect(await allTuples(instance, { thread_id: 'long' })).toHaveLength(total);
      }
      await saver.deleteThread('long');
      expect(await allTuples(reader, { thread_id: 'long' })).toHaveLength(0);
    });

    it('B8: deleteThread removes the log and the marker; a new run on the thread starts empty', async () => {
      const saver = await fresh();
      const other = new KeepsakeSaver({ adapter: saver.adapter, adapterOpened: true });
      await steps(saver, 'gone', 3);
      expect(await allTuples(other, { thread_id: 'gone' })).toHaveLength(3);
      await saver.deleteThread('gone');
      expect(await saver.adapter.listLogs(logSessionId('gone'))).toEqual([]);
      expect(await allTuples(other, {})).toHaveLength(0);
      await steps(saver, 'gone', 1);
      expect(await allTuples(other, { thread_id: 'gone' })).toHaveLength(1);
    });

    it('threads stored as documents (before 0.2) stay readable and writable', async () => {
      const saver = await fresh();
      const old = new KeepsakeSaver({
        adapter: saver.adapter,
        adapterOpened: true,
        layout: 'documents',
      });
      const { checkpoints } = await steps(old, 'old-thread', 2);
      await steps(saver, 'new-thread', 2);
      const latest = await saver.getTuple({ configurable: { thread_id: 'old-thread' } });
      expect(latest?.checkpoint.id).toBe(checkpoints[1]!.id);
      expect(latest?.checkpoint.channel_values).toEqual({ profile: { name: 'Ada' }, counter: 1 });
      await steps(saver, 'old-thread', 1);
      expect(await allTuples(saver, { thread_id: 'old-thread' })).toHaveLength(3);
      expect(await saver.adapter.listLogs(logSessionId('old-thread'))).toEqual([]);
      // A listing of every thread sees both layouts, newest first.
      const everything = await allTuples(saver, {});
      expect(everything).toHaveLength(5);
      const ids = everything.map((tuple) => tuple.checkpoint.id);
      expect(ids).toEqual([...ids].sort().reverse());
    });
  });
}

describe('log layout: memory backend shared by instances', () => {
  it('a saver on a fresh adapter of the same backend reads what another wrote', async () => {
    const backend = createMemoryBackend();
    const writer = new KeepsakeSaver({ adapter: memoryAdapter({ backend }) });
    const { checkpoints } = await steps(writer, 't', 4);
    const reader = new KeepsakeSaver({ adapter: memoryAdapter({ backend }) });
    const tuples = await allTuples(reader, { thread_id: 't' });
    expect(tuples.map((tuple) => tuple.checkpoint.id)).toEqual(
      checkpoints.map((checkpoint) => checkpoint.id).reverse(),
    );
  });
});
