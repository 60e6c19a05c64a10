import { readWholeJournal } from './journal-read.js';
import { rewordMarker } from './markers.js';
import type { RecoveryContext } from './recovery.js';
import type { RunHost } from './run-host.js';
import type { CacheEntry } from './session-cache.js';
import { terminalStateOf } from './terminal-state.js';
import { foldJournal } from './transcript.js';

/**
 * D4: a run fenced out by recovery (its stream was presumed dead) may still finish its
 * journal. What it wrote is folded into the transcript above that run's interrupted
 * marker, de-duplicated by journal tags (F4); a completed journal removes the marker.
 * The caller holds the session lock.
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
  if (marker === undefined) return;
  const journal = await readWholeJournal(context.adapter, session.id, runId);
  const terminal = terminalStateOf(journal.records);
  const fold = foldJournal(session, journal.records, index, {
    runId,
    now: context.now,
    recovered: true,
    partial: terminal !== 'completed',
  });
  if (fold.changes === 0 && terminal !== 'completed') return;
  const markerIndex = index + fold.inserted.length;
  if (terminal === 'completed') session.messages.splice(markerIndex, 1);
  else session.messages[markerIndex] = rewordMarker(marker, 'recovered');
  // Removing this run's own marker is the only shrink here (allowed, and retained, B5).
  await host.write(entry, {
    fsync: true,
    touchUpdatedAt: false,
    allowShrink: terminal === 'completed',
  });
}
