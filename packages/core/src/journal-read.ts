import type { StorageAdapter } from './adapter.js';
import type { JournalReadOptions, JournalReadResult } from './run-types.js';
import { type JournalRecord, journalRecordSchema } from './schemas.js';

/** The default page of a journal read, and the page writers and whole reads walk by. */
export const READ_PAGE = 10_000;

/** Reads and validates a journal (E2 identity checks, E3 torn tails and gaps). */
export async function readJournal(
  adapter: StorageAdapter,
  sessionId: string,
  runId: string,
  options: JournalReadOptions = {},
): Promise<JournalReadResult> {
  const afterSequence = options.afterSequence ?? 0;
  const limit = options.limit ?? READ_PAGE;
  const result = await adapter.readLog(sessionId, runId, { afterSequence, limit });
  const records: JournalRecord[] = [];
  let expected = afterSequence + 1;
  let gap: JournalReadResult['gap'] = null;
  let invalidRecord: JournalReadResult['invalidRecord'] = null;
  for (const stored of result.records) {
    if (options.upToSequence !== undefined && stored.sequence > options.upToSequence) break;
    if (stored.sequence !== expected) {
      gap = { expected, found: stored.sequence };
      break;
    }
    const record = parseRecord(stored.text);
    if (
      record === null ||
      record.sequence !== stored.sequence ||
      record.sessionId !== sessionId ||
      record.runId !== runId
    ) {
      invalidRecord = { sequence: stored.sequence };
      break;
    }
    records.push(record);
    expected++;
  }
  return { records, exists: result.exists, tornTail: result.tornTail, gap, invalidRecord };
}

function parseRecord(text: string): JournalRecord | null {
  try {
    const parsed = journalRecordSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/** Reads a whole journal, page by page. */
export async function readWholeJournal(
  adapter: StorageAdapter,
  sessionId: string,
  runId: string,
): Promise<JournalReadResult> {
  const first = await readJournal(adapter, sessionId, runId);
  const records = [...first.records];
  let page = first;
  while (page.records.length === READ_PAGE && page.gap === null && page.invalidRecord === null) {
    page = await readJournal(adapter, sessionId, runId, {
      afterSequence: records.at(-1)!.sequence,
    });
    records.push(...page.records);
  }
  return { ...page, exists: first.exists, records };
}
