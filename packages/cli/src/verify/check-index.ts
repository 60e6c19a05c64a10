import { type SessionSummary, type StorageAdapter, sessionSummarySchema } from '@keepsake/core';
import type { SessionFacts } from './check-documents.js';
import type { Findings } from './findings.js';

const FIELDS = [
  'title',
  'createdAt',
  'updatedAt',
  'messageCount',
  'pending',
  'parentId',
  'rotatedTo',
] as const satisfies ReadonlyArray<keyof SessionSummary>;

/**
 * B7: the index lists every readable session once, with the summary its document gives, and
 * nothing else. Read from the adapter as it is stored, without the store's repairs.
 */
export async function checkIndex(
  adapter: StorageAdapter,
  sessions: ReadonlyMap<string, SessionFacts>,
  findings: Findings,
): Promise<number> {
  const entries = new Map<string, SessionSummary>();
  let cursor: string | null = null;
  do {
    const page = await adapter.listIndex({ cursor, limit: 500 });
    if (page.status === 'missing') {
      findings.warning(
        'index',
        'there is no index yet; keepsake repair (or the next listing by a writing store) rebuilds it (B7)',
      );
      return 0;
    }
    if (page.status === 'corrupt') {
      findings.problem(
        'index',
        `it cannot be read (${page.reason}); keepsake repair rebuilds it (B7)`,
      );
      return 0;
    }
    for (const raw of page.entries) {
      const parsed = sessionSummarySchema.safeParse(raw);
      if (!parsed.success) {
        findings.problem(
          'index',
          `an entry is not a session summary: ${JSON.stringify(raw)?.slice(0, 200)}`,
        );
        continue;
      }
      if (entries.has(parsed.data.id)) {
        findings.problem('index', `session "${parsed.data.id}" is listed twice`);
      }
      entries.set(parsed.data.id, parsed.data);
    }
    cursor = page.nextCursor;
  } while (cursor !== null);
  for (const [id, entry] of entries) {
    const facts = sessions.get(id);
    if (facts === undefined) {
      findings.problem(
        'index',
        `entry "${id}" has no readable document (keepsake repair drops it, B7)`,
      );
      continue;
    }
    const differing = FIELDS.filter((field) => entry[field] !== facts.summary[field]);
    if (differing.length > 0) {
      const details = differing
        .map(
          (field) =>
            `${field} ${JSON.stringify(entry[field])} ≠ ${JSON.stringify(facts.summary[field])}`,
        )
        .join(', ');
      findings.problem('index', `entry "${id}" disagrees with its document: ${details}`);
    }
  }
  for (const id of sessions.keys()) {
    if (!entries.has(id)) findings.problem('index', `session "${id}" is not in the index`);
  }
  return entries.size;
}
