import type { SessionStore } from '@keepsake/core';
import { type JournalHealth, journalHealth } from '../journal-health.js';
import type { SessionFacts } from './check-documents.js';
import type { Findings } from './findings.js';

/**
 * E2, E3: every journal of every session is framed (no record that does not parse or does
 * not belong there) and gap-free; a torn last record is reported as a warning (the next
 * append repairs it).
 */
export async function checkJournals(
  store: SessionStore,
  sessionId: string,
  facts: SessionFacts,
  findings: Findings,
): Promise<JournalHealth[]> {
  const journals: JournalHealth[] = [];
  for (const runId of await store.listRuns(sessionId)) {
    const item = `journal ${sessionId}/${runId}`;
    const health = await journalHealth(store, sessionId, runId);
    journals.push(health);
    for (const invalid of health.invalidRecords) {
      findings.problem(
        item,
        `record ${invalid.sequence} is skipped by readers: ${invalid.reason} (E2)`,
      );
    }
    for (const gap of health.gaps) {
      findings.problem(
        item,
        `sequence ${gap.expected} is missing: the next record stored is ${gap.found} (E3)`,
      );
    }
    if (health.tornTail) {
      findings.warning(
        item,
        'its last record was torn by a crash; the next append repairs it (E3)',
      );
    }
    if (health.terminalState === null && facts.pendingRunId !== runId) {
      findings.warning(
        item,
        'the run never ended and is not the pending turn: its output is folded in by recovery only while it is the last turn (D4, F2)',
      );
    }
  }
  return journals;
}
