import type { JournalRecord, SessionStore } from '@keepsake/core';

/** A run's journal from the start, page after page; null when the run left no journal. */
export async function readWholeJournal(
  store: SessionStore,
  sessionId: string,
  runId: string,
): Promise<JournalRecord[] | null> {
  const records: JournalRecord[] = [];
  let after = 0;
  for (;;) {
    const page = await store.readJournal(sessionId, runId, { afterSequence: after });
    if (!page.exists) return after === 0 ? null : records;
    records.push(...page.records);
    // lastSequence counts damaged records too, so a page of only damaged ones still moves on.
    if (page.lastSequence <= after) return records;
    after = page.lastSequence;
  }
}
