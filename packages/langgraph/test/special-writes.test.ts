import type { RunnableConfig } from '@langchain/core/runnables';
import type { BaseCheckpointSaver } from '@langchain/langgraph-checkpoint';
import {
  type CheckpointPendingWrite,
  ERROR,
  emptyCheckpoint,
  INTERRUPT,
  MemorySaver,
  type PendingWrite,
  RESUME,
  SCHEDULED,
  uuid6,
} from '@langchain/langgraph-checkpoint';
import { afterEach, describe, expect, it } from 'vitest';
import { KeepsakeSaver } from '../src/index.js';
import { backends } from './backends.js';

// LangGraph's MemorySaver keeps one write per (task, index): a special write (error,
// scheduled, interrupt, resume: negative indices) is replaced by a later putWrites, a
// regular one keeps the value stored first. The saver stores one document per putWrites
// call, and must answer as MemorySaver does whatever documents the writes landed in.

const metadata = { source: 'loop' as const, step: 0, parents: {} };

async function firstCheckpoint(saver: BaseCheckpointSaver, threadId: string, id: string) {
  return saver.put(
    { configurable: { thread_id: threadId, checkpoint_ns: '' } },
    { ...emptyCheckpoint(), id },
    metadata,
    {},
  );
}

async function pending(saver: BaseCheckpointSaver, config: RunnableConfig) {
  return (await saver.getTuple(config))?.pendingWrites as CheckpointPendingWrite[];
}

/** A small deterministic generator (mulberry32), so a failing sequence can be replayed. */
function generator(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

describe.each(backends)('pending writes answer as MemorySaver does ($name)', (backend) => {
  const disposals: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const dispose of disposals.splice(0)) await dispose();
  });

  async function saverOnFreshAdapter() {
    const { adapter, dispose } = await backend.create();
    disposals.push(dispose);
    return new KeepsakeSaver({ adapter });
  }

  it('a later __resume__ replaces one stored in an earlier call under another first index', async () => {
    const saver = await saverOnFreshAdapter();
    const memory = new MemorySaver();
    const id = uuid6(-1);
    for (const each of [saver, memory] as BaseCheckpointSaver[]) {
      const config = await firstCheckpoint(each, 't', id);
      await each.putWrites(
        config,
        [
          [INTERRUPT, ['i2']],
          [RESUME, ['r1']],
        ],
        'T',
      );
      await each.putWrites(
        config,
        [
          [RESUME, ['r1', 'r2']],
          ['foo', 1],
        ],
        'T',
      );
    }
    const config = { configurable: { thread_id: 't', checkpoint_ns: '', checkpoint_id: id } };
    expect(await pending(saver, config)).toEqual([
      ['T', RESUME, ['r1', 'r2']],
      ['T', INTERRUPT, ['i2']],
      ['T', 'foo', 1],
    ]);
    expect(await pending(saver, config)).toEqual(await pending(memory, config));
    // A second instance on the same storage reads the same.
    const other = new KeepsakeSaver({ adapter: saver.adapter, adapterOpened: true });
    expect(await pending(other, config)).toEqual(await pending(memory, config));
  });

  it('a regular write keeps the value stored first, also when a later call replaces its document', async () => {
    const saver = await saverOnFreshAdapter();
    const memory = new MemorySaver();
    const id = uuid6(-1);
    for (const each of [saver, memory] as BaseCheckpointSaver[]) {
      const config = await firstCheckpoint(each, 't', id);
      await each.putWrites(
        config,
        [
          [INTERRUPT, 'first'],
          ['a', 1],
          ['b', 1],
        ],
        'T',
      );
      await each.putWrites(
        config,
        [
          ['x', 0],
          ['a', 2],
        ],
        'T',
      );
      await each.putWrites(
        config,
        [
          [INTERRUPT, 'second'],
          ['a', 3],
        ],
        'T',
      );
    }
    const config = { configurable: { thread_id: 't', checkpoint_ns: '', checkpoint_id: id } };
    expect(await pending(saver, config)).toEqual([
      ['T', INTERRUPT, 'second'],
      ['T', 'x', 0],
      ['T', 'a', 1],
      ['T', 'b', 1],
    ]);
    expect(await pending(saver, config)).toEqual(await pending(memory, config));
  });

  it('random putWrites sequences: every read equals MemorySaver', async () => {
    const seed = Number(process.env.KEEPSAKE_TEST_WRITES_SEED ?? Date.now() % 2 ** 31);
    const random = generator(seed);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
    const channels = [ERROR, SCHEDULED, INTERRUPT, RESUME, 'a', 'b', 'c'];
    for (let round = 0; round < 4; round++) {
      const saver = await saverOnFreshAdapter();
      const memory = new MemorySaver();
      const id = uuid6(-1);
      const configs = await Promise.all(
        [saver, memory].map((each) => firstCheckpoint(each, `thread-${round}`, id)),
      );
      const history: string[] = [];
      for (let call = 0; call < 12; call++) {
        const task = pick(['T1', 'T2']);
        const writes: PendingWrite[] = Array.from(
          { length: 1 + Math.floor(random() * 3) },
          () => [pick(channels), `${call}:${Math.floor(random() * 100)}`] as PendingWrite,
        );
        history.push(`${task} ${JSON.stringify(writes)}`);
        await saver.putWrites(configs[0]!, writes, task);
        await memory.putWrites(configs[1]!, writes, task);
        expect(
          await pending(saver, configs[0]!),
          `seed ${seed} (KEEPSAKE_TEST_WRITES_SEED), round ${round}, calls:\n${history.join('\n')}`,
        ).toEqual(await pending(memory, configs[1]!));
      }
    }
  });
});
