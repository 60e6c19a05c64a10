import type { AdapterLiveness, Session } from '@keepsake/core';

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

/**
 * F1: whether `reader`'s adapter says for certain that the owner of `worker`'s runs is gone
 * (liveness; fs after a simulated machine crash: another boot). A dead run whose owner is
 * certainly gone is repaired at once; any other waits out the grace.
 */
export async function ownerIsGone(
  worker: { adapter: { liveness?: AdapterLiveness | undefined } },
  reader: { adapter: { liveness?: AdapterLiveness | undefined } },
): Promise<boolean> {
  const ownerId = worker.adapter.liveness?.ownerId;
  if (ownerId === undefined || reader.adapter.liveness === undefined) return false;
  return (await reader.adapter.liveness.ownerState(ownerId)) === 'gone';
}
