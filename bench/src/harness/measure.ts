import type { Measurement } from './results.js';

/** One way of doing the work a case measures: Keepsake or one of its baselines. */
export interface Contender {
  readonly name: string;
  /**
   * Runs one trial and returns its figure in the table's unit (saves/s, ms, bytes). Setup a
   * trial needs (a fresh file, a fresh session) happens inside, before the clock starts.
   */
  trial(): Promise<number>;
}

export interface RoundOptions {
  /** Rounds run and thrown away first: JIT, page cache, the allocator's first growth. */
  readonly warmupRounds: number;
  /** Rounds whose figures are kept; each figure in the report is their median. */
  readonly rounds: number;
}

export interface TrialEvent {
  readonly contender: string;
  readonly round: number;
  readonly rounds: number;
  readonly warmup: boolean;
}

/**
 * Runs every contender once per round, in a rotated order, so that a burst of noise on the
 * shared machine lands on every contender alike instead of on whichever ran during it, and
 * no contender always runs right after the same other one.
 */
export async function measureSideBySide(
  contenders: readonly Contender[],
  options: RoundOptions,
  onTrial?: (event: TrialEvent) => void,
): Promise<Measurement[]> {
  const samples = new Map<string, number[]>(contenders.map((contender) => [contender.name, []]));
  const total = options.warmupRounds + options.rounds;
  for (let round = 0; round < total; round++) {
    const warmup = round < options.warmupRounds;
    for (let offset = 0; offset < contenders.length; offset++) {
      const contender = contenders[(round + offset) % contenders.length] as Contender;
      onTrial?.({
        contender: contender.name,
        round: warmup ? round + 1 : round - options.warmupRounds + 1,
        rounds: warmup ? options.warmupRounds : options.rounds,
        warmup,
      });
      const value = await contender.trial();
      if (!warmup) samples.get(contender.name)?.push(value);
    }
  }
  return contenders.map((contender) => ({
    contender: contender.name,
    samples: samples.get(contender.name) ?? [],
  }));
}

/** Operations per second of `count` operations that took `milliseconds`. */
export function perSecond(count: number, milliseconds: number): number {
  return (count * 1000) / Math.max(milliseconds, 1e-6);
}

/** Times `action` and returns the elapsed milliseconds. */
export async function timed(action: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await action();
  return performance.now() - started;
}

/** Runs `worker` over `items`, at most `concurrency` at a time. */
export async function mapConcurrently<T>(
  items: readonly T[],
  concurrency: number,
  worker: (item: T, index: number) => Promise<unknown>,
): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const index = next++;
      await worker(items[index] as T, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, lane));
}
