import type { RoundOptions } from './harness/measure.js';

/** Sizes of one run. `--quick` keeps every section and every case, with fewer rounds and less data. */
export interface BenchConfig {
  readonly mode: 'quick' | 'full';
  readonly rounds: RoundOptions;
  readonly durableSave: {
    readonly historyLengths: readonly number[];
    /**
     * Most Keepsake saves per trial. A trial saves until the store's compacting full write,
     * one whole cycle; the cap is a guard against a store that never compacts.
     */
    readonly keepsakeMaxSaves: number;
    /** Baseline saves per trial; each save costs the same, so fewer suffice on long histories. */
    readonly baselineSaves: (historyLength: number) => number;
  };
  readonly journal: {
    readonly streams: readonly number[];
    /** Appends per trial, spread over the streams. */
    readonly appendsPerTrial: number;
    /**
     * Most appends one stream makes in a trial: a lone stream waits out one fdatasync per
     * append, so its trial would last ten seconds at the full count.
     */
    readonly maximumPerStream: number;
    readonly eventBytes: number;
  };
  readonly pacedStreams: {
    readonly streams: number;
    readonly tokensPerStream: number;
    /** Mean gap between two tokens of a stream: about 40 tokens per second. */
    readonly gapMs: number;
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

/**
 * Baseline saves per trial on short histories: as many as Keepsake's cycle there (the
 * default `deltas.compactAfter` of 64 deltas, then the full write).
 */
const SHORT_HISTORY_BASELINE_SAVES = 65;

export function benchConfig(mode: 'quick' | 'full'): BenchConfig {
  const quick = mode === 'quick';
  return {
    mode,
    rounds: quick ? { warmupRounds: 1, rounds: 3 } : { warmupRounds: 1, rounds: 7 },
    durableSave: {
      historyLengths: [10, 100, 1_000, 10_000],
      keepsakeMaxSaves: 50_000,
      baselineSaves: (historyLength) => {
        if (historyLength >= 10_000) return quick ? 3 : 12;
        if (historyLength >= 1_000) return quick ? 8 : 40;
        return quick ? 20 : SHORT_HISTORY_BASELINE_SAVES;
      },
    },
    journal: {
      streams: [1, 16, 100],
      // Trials of about a second at 100 streams: shorter ones (2,000 appends) ended before
      // the contenders reached their steady state and scattered the ratios 0.3x-0.8x.
      appendsPerTrial: quick ? 3_000 : 20_000,
      maximumPerStream: quick ? 300 : 2_000,
      eventBytes: 1024,
    },
    pacedStreams: {
      streams: 100,
      tokensPerStream: quick ? 15 : 40,
      gapMs: 25,
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
