import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { memoryAdapter } from '../adapter/memory-adapter.js';
import { createSessionStore } from '../store.js';
import { ManualClock } from './clock.js';

describe('ManualClock', () => {
  it('lets the work a timer started finish, real I/O included, before the next timer fires', async () => {
    const clock = new ManualClock(0);
    const seen: string[] = [];
    const tick = (name: string) => async () => {
      seen.push(`${name} starts at ${clock.now()}`);
      // Real I/O latency: far more than a few setImmediate rounds.
      await sleep(30);
      seen.push(`${name} ends at ${clock.now()}`);
    };
    clock.setTimer(tick('first'), 100);
    clock.setTimer(tick('second'), 200);
    await clock.advance(1_000);
    expect(seen).toEqual([
      'first starts at 100',
      'first ends at 100',
      'second starts at 200',
      'second ends at 200',
    ]);
    expect(clock.now()).toBe(1_000);
  });

  it('fires a timer that a timer scheduled, within the same advance', async () => {
    const clock = new ManualClock(0);
    const fired: number[] = [];
    const every100 = async (): Promise<void> => {
      await sleep(5);
      fired.push(clock.now());
      clock.setTimer(every100, 100);
    };
    clock.setTimer(every100, 100);
    await clock.advance(350);
    expect(fired).toEqual([100, 200, 300]);
  });

  it('queues overlapping advances, so time never moves backwards', async () => {
    const clock = new ManualClock(0);
    const times: number[] = [];
    clock.setTimer(async () => {
      await sleep(20);
    }, 10);
    const first = clock.advance(50);
    const second = clock.advance(50);
    const observer = (async () => {
      for (let round = 0; round < 20; round++) {
        times.push(clock.now());
        await sleep(2);
      }
    })();
    await Promise.all([first, second, observer]);
    expect(clock.now()).toBe(100);
    for (let index = 1; index < times.length; index++) {
      expect(times[index]).toBeGreaterThanOrEqual(times[index - 1] as number);
    }
  });

  it('moves on after workTimeoutMs when a timer’s work waits for something only a later timer releases', async () => {
    const clock = new ManualClock(0, { workTimeoutMs: 50 });
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    clock.setTimer(() => released, 10);
    clock.setTimer(() => release(), 20);
    await clock.advance(30);
    await released;
    expect(clock.now()).toBe(30);
  });

  it('E4: one large jump gives every checkpoint of a run whose saves do real I/O, each stamped with its own time', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    // I/O latency stand-in: each session write takes real time, like a disk write.
    const inner = memoryAdapter();
    const slow = Object.assign(Object.create(inner) as object, {
      putDocument: async (...args: Parameters<typeof inner.putDocument>) => {
        await sleep(10);
        return inner.putDocument(...args);
      },
    }) as typeof inner;
    const store = createSessionStore({
      adapter: slow,
      clock,
      checkpoint: { intervalMs: 1_000, idleRefreshMs: 1_000 },
    });
    const checkpoints: number[] = [];
    store.on((event) => {
      if (event.type === 'checkpoint') checkpoints.push(clock.now());
    });
    const session = await store.create({ id: 'jump' });
    const startedAt = clock.now();
    const run = await store.beginRun(session.id, { userMessage: { role: 'user', content: 'q' } });
    await clock.advance(5_000);
    expect(checkpoints).toEqual([1, 2, 3, 4, 5].map((second) => startedAt + second * 1_000));
    const stored = await createSessionStore({ adapter: inner, clock }).load(session.id);
    expect(stored.pending?.heartbeatAt).toBe(startedAt + 5_000);
    await run.cancel();
    await store.close();
  });
});
