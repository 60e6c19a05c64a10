import type { JournalEventType, RunTerminalState, SessionStore } from '@keepsake/core';

/** What `show` and `verify` say about one run's journal. */
export interface JournalHealth {
  runId: string;
  exists: boolean;
  /** The last sequence stored, a damaged record included (E2). */
  lastSequence: number;
  /** Intact records read. */
  records: number;
  terminalState: RunTerminalState | null;
  lastEventType: JournalEventType | null;
  eventCounts: Partial<Record<JournalEventType, number>>;
  /** E2: records that do not parse or do not belong where they are stored. */
  invalidRecords: Array<{ sequence: number; reason: string }>;
  /** E3: jumps in the sequence. */
  gaps: Array<{ expected: number; found: number }>;
  /** E3: a record torn by a crash at the end (harmless: the next append repairs it). */
  tornTail: boolean;
}

/**
 * Reads a journal through the store, so every check is core's (E2 identity checks, E3 gaps
 * and torn tails): `runSummary` for the outcome, then one `readJournal` over the whole
 * journal, so an event id reused far from its first use is still caught.
 */
export async function journalHealth(
  store: SessionStore,
  sessionId: string,
  runId: string,
): Promise<JournalHealth> {
  const summary = await store.runSummary(sessionId, runId);
  const read = await store.readJournal(sessionId, runId, {
    limit: Math.max(summary.lastSequence, 1),
  });
  const eventCounts: JournalHealth['eventCounts'] = {};
  for (const record of read.records) {
    eventCounts[record.type] = (eventCounts[record.type] ?? 0) + 1;
  }
  return {
    runId,
    exists: summary.exists,
    lastSequence: summary.lastSequence,
    records: read.records.length,
    terminalState: summary.terminalState,
    lastEventType: summary.lastEventType,
    eventCounts,
    invalidRecords: read.invalidRecords,
    gaps: read.gaps,
    tornTail: read.tornTail,
  };
}

/** One line: outcome, records, and whatever is wrong. */
export function journalLine(health: JournalHealth): string {
  const parts = [
    health.terminalState ?? 'open',
    `${health.records} record${health.records === 1 ? '' : 's'}`,
    `last sequence ${health.lastSequence}`,
  ];
  if (health.invalidRecords.length > 0) {
    parts.push(
      `${health.invalidRecords.length} invalid (first at ${health.invalidRecords[0]?.sequence})`,
    );
  }
  if (health.gaps.length > 0) {
    const gap = health.gaps[0]!;
    parts.push(
      `${health.gaps.length} gap(s) (first: ${gap.expected} expected, ${gap.found} found)`,
    );
  }
  if (health.tornTail) parts.push('torn last record');
  return parts.join(', ');
}
