import { readWholeJournal } from './journal-read.js';
import { type RecoveryContext, refoldMarker } from './recovery.js';
import type { RunHost } from './run-host.js';
import type { CacheEntry } from './session-cache.js';
import { isSuperseded } from './turn-markers.js';

/**
 * D4: a run fenced out by recovery (its stream was presumed dead) may still finish its
 * journal. What it wrote is folded into the transcript above that run's interrupted
 * marker, de-duplicated by journal tags (F4); a completed journal removes the marker.
 * Once a later turn was answered, nothing is folded in above it any more: the late
 * output stays in the run's journal (`readJournal(sessionId, marker.runId)`), and the
 * transcript's history is never rewritten. The caller holds the session lock.
 */
export async function foldLateOutput(
  host: RunHost,
  entry: CacheEntry,
  runId: string,
  context: RecoveryContext,
): Promise<void> {
  const session = entry.session;
  const index = session.messages.findIndex(
    (message) => message.marker?.type === 'interrupted' && message.marker.runId === runId,
  );
  const marker = session.messages[index];
  if (marker === undefined || isSuperseded(session, index)) return;
  const journal = await readWholeJournal(context.adapter, session.id, runId);
  const retry = marker.marker!.retry ?? { streamId: runId, attempts: 0, firstSeenAt: context.now };
  const outcome = refoldMarker(session, index, journal.records, retry, context);
  if (outcome === 'unchanged') return;
  // Removing this run's own marker is the only shrink here (allowed, and retained, B5).
  await host.write(entry, {
    fsync: true,
    touchUpdatedAt: false,
    allowShrink: outcome === 'removed',
  });
}
