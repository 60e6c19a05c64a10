import { describe, expect, it } from 'vitest';
import { type Contender, mapConcurrently, measureSideBySide, perSecond } from './measure.js';

function recordingContender(name: string, log: string[]): Contender {
  let trials = 0;
  return {
    name,
    async trial() {
      log.push(name);
      return ++trials;
    },
  };
}

describe('measureSideBySide', () => {
  it('rotates the order of contenders from round to round', async () => {
    const log: string[] = [];
    const contenders = ['a', 'b', 'c'].map((name) => recordingContender(name, log));
    await measureSideBySide(contenders, { warmupRounds: 0, rounds: 3 });
    expect(log).toEqual(['a', 'b', 'c', 'b', 'c', 'a', 'c', 'a', 'b']);
  });

  it('throws the warm-up rounds away and keeps one sample per measured round', async () => {
    const contenders = ['a', 'b'].map((name) => recordingContender(name, []));
    const measurements = await measureSideBySide(contenders, { warmupRounds: 2, rounds: 3 });
    expect(measurements).toEqual([
      { contender: 'a', samples: [3, 4, 5] },
      { contender: 'b', samples: [3, 4, 5] },
    ]);
  });

  it('reports each trial with its round, warm-up first', async () => {
    const events: string[] = [];
    await measureSideBySide(
      [recordingContender('a', [])],
      { warmupRounds: 1, rounds: 2 },
      (event) =>
        events.push(`${event.warmup ? 'warm-up' : 'round'} ${event.round}/${event.rounds}`),
    );
    expect(events).toEqual(['warm-up 1/1', 'round 1/2', 'round 2/2']);
  });
});

describe('perSecond', () => {
  it('turns a count and milliseconds into a rate', () => {
    expect(perSecond(50, 250)).toBe(200);
  });
});

describe('mapConcurrently', () => {
  it('visits every item once and never runs more than the limit at once', async () => {
    let running = 0;
    let peak = 0;
    const seen: number[] = [];
    await mapConcurrently([1, 2, 3, 4, 5, 6, 7], 3, async (item) => {
      running++;
      peak = Math.max(peak, running);
      await Promise.resolve();
      seen.push(item);
      running--;
    });
    expect(seen.sort()).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(peak).toBe(3);
  });
});
