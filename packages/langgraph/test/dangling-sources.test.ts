import type { StorageAdapter } from '@keepsake/core';
import type { RunnableConfig } from '@langchain/core/runnables';
import {
  type Checkpoint,
  type CheckpointTuple,
  emptyCheckpoint,
  uuid6,
} from '@langchain/langgraph-checkpoint';
import { afterEach, describe, expect, it } from 'vitest';
import { CorruptCheckpointError, KeepsakeSaver, MissingChannelSourceError } from '../src/index.js';
import { backends } from './backends.js';

// A checkpoint reads an unchanged channel through a pointer at the older checkpoint that
// holds its value. Once that document is gone (quarantined, A2, or deleted), every read of a
// checkpoint that needs it must fail typed, never answer without the channel's value.

const metadata = (step: number) => ({ source: 'loop' as const, step, parents: {} });

async function allTuples(saver: KeepsakeSaver, threadId: string): Promise<CheckpointTuple[]> {
  const tuples: CheckpointTuple[] = [];
  for await (const tuple of saver.list({ configurable: { thread_id: threadId } })) {
    tuples.push(tuple);
  }
  return tuples;
}

async function documentIdOf(adapter: StorageAdapter, checkpointId: string): Promise<string> {
  const { ids } = await adapter.listDocuments('checkpoints', { cursor: null, limit: 1000 });
  const found = ids.find((id) => id.split('.').length === 3 && id.endsWith(`.${checkpointId}`));
  if (found === undefined) throw new Error(`no document for checkpoint ${checkpointId}`);
  return found;
}

async function damage(adapter: StorageAdapter, checkpointId: string): Promise<void> {
  const id = await documentIdOf(adapter, checkpointId);
  const stored = await adapter.getDocument('checkpoints', id);
  await adapter.putDocument(
    'checkpoints',
    id,
    { kind: 'full', revision: stored!.revision + 1, text: '{"torn' },
    { expectedRevision: stored!.revision, durable: true },
  );
}

/**
 * Three checkpoints: the first writes `profile` and `counter`, the next two only `counter`,
 * so the second and third read `profile` from the first.
 */
async function threeSteps(saver: KeepsakeSaver, threadId: string) {
  let config: RunnableConfig = { configurable: { thread_id: threadId, checkpoint_ns: '' } };
  const checkpoints: Checkpoint[] = [];
  let versions: Record<string, number> = {};
  for (let step = 0; step < 3; step++) {
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
      channel_versions: { ...versions },
    };
    checkpoints.push(checkpoint);
    config = await saver.put(config, checkpoint, metadata(step), newVersions);
  }
  return { checkpoints, config, versions };
}

async function failure(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => new Error('expected a rejection'),
    (error: unknown) => error,
  );
}

describe.each(backends)('A2: a channel value whose source document is gone ($name)', (backend) => {
  const disposals: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const dispose of disposals.splice(0)) await dispose();
  });

  async function saverOnFreshAdapter() {
    const { adapter, dispose } = await backend.create();
    disposals.push(dispose);
    // The document layout: its sources are documents a test can quarantine (log.test.ts
    // covers a quarantined record of the log layout).
    return new KeepsakeSaver({ adapter, layout: 'documents' });
  }

  it('a quarantined source makes every later read fail typed, never drop the channel', async () => {
    const saver = await saverOnFreshAdapter();
    const { checkpoints, config, versions } = await threeSteps(saver, 'q');
    const [first, second, third] = checkpoints as [Checkpoint, Checkpoint, Checkpoint];
    const newest = await saver.getTuple({ configurable: { thread_id: 'q' } });
    expect(newest?.checkpoint.channel_values).toEqual({ profile: { name: 'Ada' }, counter: 2 });

    await damage(saver.adapter, first.id);
    // The read that meets the damage quarantines it (A2).
    const quarantining = await failure(saver.getTuple({ configurable: { thread_id: 'q' } }));
    expect(CorruptCheckpointError.isInstance(quarantining), String(quarantining)).toBe(true);
    expect(await saver.adapter.listQuarantined()).toHaveLength(1);

    // Every read after it fails too, naming what is missing, however often it is asked.
    for (let attempt = 0; attempt < 3; attempt++) {
      const error = await failure(saver.getTuple({ configurable: { thread_id: 'q' } }));
      expect(MissingChannelSourceError.isInstance(error), String(error)).toBe(true);
      expect(error).toMatchObject({
        code: 'corrupt_document',
        threadId: 'q',
        checkpointNamespace: '',
        checkpointId: third.id,
        channel: 'profile',
        sourceCheckpointId: first.id,
        problem: 'missing',
      });
    }
    const bySecondId = await failure(
      saver.getTuple({
        configurable: { thread_id: 'q', checkpoint_ns: '', checkpoint_id: second.id },
      }),
    );
    expect(bySecondId).toMatchObject({ checkpointId: second.id, channel: 'profile' });
    expect(MissingChannelSourceError.isInstance(await failure(allTuples(saver, 'q')))).toBe(true);

    // A put on the newest does not copy the pointer at the quarantined checkpoint forward:
    // the value LangGraph passes is written into the new checkpoint, which reads whole.
    const counter = saver.getNextVersion(versions.counter);
    const fourth: Checkpoint = {
      ...emptyCheckpoint(),
      id: uuid6(-1),
      channel_values: { profile: { name: 'Ada' }, counter: 3 },
      channel_versions: { ...versions, counter },
    };
    const written = await saver.put(config, fourth, metadata(3), { counter });
    expect((await saver.getTuple(written))?.checkpoint.channel_values).toEqual({
      profile: { name: 'Ada' },
      counter: 3,
    });
  });

  it('a put on a checkpoint whose source is gone writes the value inline when it has it, else fails typed', async () => {
    const saver = await saverOnFreshAdapter();
    const { checkpoints, config, versions } = await threeSteps(saver, 'p');
    await saver.adapter.deleteDocument(
      'checkpoints',
      await documentIdOf(saver.adapter, checkpoints[0]!.id),
      { durable: true },
    );
    const counter = saver.getNextVersion(versions.counter);
    const nextVersions = { ...versions, counter };
    // Another instance (another process): it asks the backend whether the source is stored.
    const other = new KeepsakeSaver({
      adapter: saver.adapter,
      adapterOpened: true,
      layout: 'documents',
    });

    // LangGraph passes every channel's value: the one the gone document held is written again.
    const withValues: Checkpoint = {
      ...emptyCheckpoint(),
      id: uuid6(-1),
      channel_values: { profile: { name: 'Ada' }, counter: 3 },
      channel_versions: nextVersions,
    };
    const written = await other.put(config, withValues, metadata(3), { counter });
    const tuple = await saver.getTuple(written);
    expect(tuple?.checkpoint.channel_values).toEqual({ profile: { name: 'Ada' }, counter: 3 });

    // Without the value, the put refuses instead of copying the dangling pointer forward.
    const withoutValues: Checkpoint = {
      ...emptyCheckpoint(),
      id: uuid6(-1),
      channel_values: { counter: 3 },
      channel_versions: nextVersions,
    };
    const refused = await failure(other.put(config, withoutValues, metadata(3), { counter }));
    expect(MissingChannelSourceError.isInstance(refused), String(refused)).toBe(true);
    expect(refused).toMatchObject({ channel: 'profile', sourceCheckpointId: checkpoints[0]!.id });
    const stored = await saver.getTuple({
      configurable: { thread_id: 'p', checkpoint_ns: '', checkpoint_id: withoutValues.id },
    });
    expect(stored).toBeUndefined();
  });

  it('a source that no longer holds the version fails typed too', async () => {
    const saver = await saverOnFreshAdapter();
    const { checkpoints } = await threeSteps(saver, 'v');
    const first = checkpoints[0]!;
    // The first checkpoint put again under its id, now without `profile` (replaced whole).
    await saver.put(
      { configurable: { thread_id: 'v', checkpoint_ns: '' } },
      { ...first, channel_values: { counter: 0 }, channel_versions: { counter: 1 } },
      metadata(0),
      { counter: 1 },
    );
    const error = await failure(saver.getTuple({ configurable: { thread_id: 'v' } }));
    expect(MissingChannelSourceError.isInstance(error), String(error)).toBe(true);
    expect(error).toMatchObject({
      checkpointId: checkpoints[2]!.id,
      channel: 'profile',
      sourceCheckpointId: first.id,
      problem: 'version',
    });
  });
});
