import type { Session } from '@keepsake/core';

/** The default recovery grace period (F1, 30 s) plus a margin, on the store's clock. */
export const PAST_GRACE_MS = 31_000;

/** A worker whose checkpoints never fire, so only the test decides when a run looks dead. */
export const QUIET_WORKER = {
  journal: { durability: 'each' },
  checkpoint: { intervalMs: 3_600_000, idleRefreshMs: 3_600_000 },
} as const;

/** The transcript's markers (E6, F1: a turn ends with at most one). */
export function markersOf(session: Session) {
  return session.messages.filter((message) => message.marker !== undefined);
}
