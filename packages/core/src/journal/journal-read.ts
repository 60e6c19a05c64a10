import type { StorageAdapter } from '../adapter/adapter.js';
import type { JournalReadOptions, JournalReadResult } from '../runs/run-types.js';
import { type JournalRecord, journalRecordSchema } from '../validation/schemas.js';

/** The default page of a journal read, and the page writers and whole reads walk by. */
export const READ_PAGE = 10_000;

/**
 * Reads and validates a journal (E2 identity checks, E3 torn tails and gaps). A record that
 * does not parse, or whose identity does not match its journal (session, run, sequence, an
 * event id already used earlier in the journal), is skipped and reported, never trusted;
 * a jump in the sequence is reported; the read goes on past both, so one damaged record
 * never hides the ones after it.
 */
export async function readJournal(
  adapter: StorageAdapter,
  sessionId: string,
  runId: string,
  options: JournalReadOptions = {},
): Promise<JournalReadResult> {
  return (await readJournalPage(adapter, sessionId, runId, options, new Set())).result;
}

async function readJournalPage(
  adapter: StorageAdapter,
  sessionId: string,
  runId: string,
  options: JournalReadOptions,
  seenEventIds: Set<string>,
): Promise<{ result: JournalReadResult; full: boolean }> {
  const afterSequence = options.afterSequence ?? 0;
  const limit = options.limit ?? READ_PAGE;
  const stored = await adapter.readLog(sessionId, runId, { afterSequence, limit });
  const records: JournalRecord[] = [];
  const gaps: JournalReadResult['gaps'] = [];
  const invalidRecords: JournalReadResult['invalidRecords'] = [];
  let expected = afterSequence + 1;
  let lastSequence = afterSequence;
  for (const entry of stored.records) {
    if (options.upToSequence !== undefined && entry.sequence > options.upToSequence) break;
    if (entry.sequence !== expected) gaps.push({ expected, found: entry.sequence });
    expected = entry.sequence + 1;
    lastSequence = entry.sequence;
    const record = parseRecord(entry.text);
    const problem =
      record === null
        ? 'it is not a valid journal record'
        : record.sequence !== entry.sequence
          ? `it says sequence ${record.sequence}`
          : record.sessionId !== sessionId || record.runId !== runId
            ? `it belongs to session "${record.sessionId}", run "${record.runId}"`
            : seenEventIds.has(record.eventId)
              ? `its event id "${record.eventId}" was used earlier in the journal`
              : null;
    if (problem !== null || record === null) {
      invalidRecords.push({ sequence: entry.sequence, reason: problem ?? 'invalid' });
      continue;
    }
    seenEventIds.add(record.eventId);
    records.push(record);
  }
  return {
    result: {
      records,
      exists: stored.exists,
      tornTail: stored.tornTail,
      gap: gaps[0] ?? null,
      invalidRecord:
        invalidRecords[0] === undefined ? null : { sequence: invalidRecords[0].sequence },
      gaps,
      invalidRecords,
      lastSequence,
    },
    full: stored.records.length >= limit,
  };
}

function parseRecord(text: string): JournalRecord | null {
  try {
    const parsed = journalRecordSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/** Reads a whole journal, page by page, its defects reported over all pages. */
export async function readWholeJournal(
  adapter: StorageAdapter,
  sessionId: string,
  runId: string,
): Promise<JournalReadResult> {
  const seenEventIds = new Set<string>();
  let page = await readJournalPage(adapter, sessionId, runId, {}, seenEventIds);
  const first = page.result;
  const records = [...first.records];
  const gaps = [...first.gaps];
  const invalidRecords = [...first.invalidRecords];
  let lastSequence = first.lastSequence;
  while (page.full) {
    page = await readJournalPage(
      adapter,
      sessionId,
      runId,
      { afterSequence: lastSequence },
      seenEventIds,
    );
    records.push(...page.result.records);
    gaps.push(...page.result.gaps);
    invalidRecords.push(...page.result.invalidRecords);
    lastSequence = page.result.lastSequence;
  }
  return {
    records,
    exists: first.exists,
    tornTail: page.result.tornTail,
    gap: gaps[0] ?? null,
    invalidRecord:
      invalidRecords[0] === undefined ? null : { sequence: invalidRecords[0].sequence },
    gaps,
    invalidRecords,
    lastSequence,
  };
}
