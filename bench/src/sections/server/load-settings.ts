import type { BenchConfig } from '../../config.js';

/** Sizes of the server section (kept here: the shared config holds the fs sections'). */
export interface ServerLoadSettings {
  /** Concurrent chats, one case each. */
  readonly chats: readonly number[];
  /** How long a trial keeps sending; every chat finishes the turn it is in. */
  readonly trialMs: number;
  /** The scripted agent's pause between events: a fast model. */
  readonly tokenDelayMs: number;
  /** Words in each scripted answer (each one a token event). */
  readonly answerWords: number;
}

export function serverLoadSettings(config: BenchConfig): ServerLoadSettings {
  return config.mode === 'quick'
    ? { chats: [50], trialMs: 2_000, tokenDelayMs: 1, answerWords: 40 }
    : { chats: [10, 50], trialMs: 3_000, tokenDelayMs: 1, answerWords: 60 };
}
