import type { RoundOptions } from './harness/measure.js';

/** Sizes of one run. `--quick` keeps every section and every case, with fewer rounds and less data. */
export interface BenchConfig {
  readonly mode: 'quick' | 'full';
  readonly rounds: RoundOptions;
  readonly durableSave: {
    readonly historyLengths: readonly number[];
    /**
     * Keepsake saves per trial: one full cycle of delta appends plus the compacting full
     * write that follows them, so the compaction's cost is in the figure, amortized as in use.
     */
    readonly keepsakeSaves: number;
    /** Baseline saves per trial; each save costs the same, so fewer suffice on long histories. */
    readonly baselineSaves: (historyLength: number) => number;
  };
  readonly journal: {
    readonly streams: readonly number[];
    /** Appends per trial, spread over the streams. */
    readonly appendsPerTrial: number;
    /** Fewest appends each stream makes in a trial, however many streams there are. */
    readonly minimumPerStream: number;
    readonly eventBytes: number;
  };
  readonly flushAll: {
    readonly sessions: number;
    readonly messagesPerSession: number;
    /** Atomic replaces the raw baseline runs at once: the store's `flushConcurrency` default. */
    readonly concurrency: number;
  };
  readonly recovery: {
    readonly sessions: number;
    readonly messagesPerSession: number;
    readonly eventsPerRun: number;
    /** Sessions loaded at once on cold start, by Keepsake and by the baseline alike. */
    readonly concurrency: number;
  };
  readonly memory: {
    readonly sessions: number;
    readonly messagesPerSession: number;
  };
}

/** The store's default `deltas.compactAfter`: a full write follows this many delta saves. */
const COMPACT_AFTER = 64;

export function benchConfig(mode: 'quick' | 'full'): BenchConfig {
  const quick = mode === 'quick';
  return {
    mode,
    rounds: quick ? { warmupRounds: 1, rounds: 3 } : { warmupRounds: 1, rounds: 7 },
    durableSave: {
      historyLengths: [10, 100, 1_000, 10_000],
      keepsakeSaves: COMPACT_AFTER + 1,
      baselineSaves: (historyLength) => {
        if (historyLength >= 10_000) return quick ? 3 : 12;
        if (historyLength >= 1_000) return quick ? 8 : 40;
        return quick ? 20 : COMPACT_AFTER + 1;
      },
    },
    journal: {
      streams: [1, 16, 100],
      appendsPerTrial: quick ? 300 : 2_000,
      minimumPerStream: quick ? 5 : 20,
      eventBytes: 1024,
    },
    flushAll: {
      sessions: quick ? 500 : 1_000,
      messagesPerSession: 10,
      concurrency: 8,
    },
    recovery: {
      sessions: quick ? 100 : 1_000,
      messagesPerSession: 10,
      eventsPerRun: 20,
      concurrency: 8,
    },
    memory: {
      sessions: quick ? 100 : 1_000,
      messagesPerSession: 100,
    },
  };
}
