import { createHash } from 'node:crypto';
import type { Collection, StorageAdapter } from '@keepsake/core';
import type { Progress } from '../progress.js';
import { canonicalDocument, sameDocument } from './canonical-document.js';
import { emptyCounts, totalDocuments } from './collection-counts.js';
import { COLLECTIONS, countDocuments, listAll, readAllRecords } from './list-all.js';

export interface Mismatch {
  /** `sessions/<id>`, `revisions/<id>`, `lifecycle/<id>` or `journal <session>/<run>`. */
  item: string;
  problem: string;
}

export interface ComparisonReport {
  /** Documents found equal in the target, per collection. */
  documents: Record<Collection, number>;
  journals: number;
  journalRecords: number;
  /**
   * Documents equal except for fields a read fills with its own time (A5: an absent message
   * time, a reset pending start): the copy holds the time it was made there.
   */
  normalized: string[];
  /** Source documents that do not decode: never copied (core's `skippedCorrupt`). */
  skippedCorrupt: string[];
  mismatches: Mismatch[];
  /** SHA-256 over every document's canonical text and every journal record, by item name. */
  sourceChecksum: string;
  targetChecksum: string;
}

/**
 * H3, checked: every document and journal record of the source is in the target, byte for
 * byte in its canonical form (a session's deltas folded in, as `migrateBackend` writes it),
 * and the two checksums agree. Reads both stores in full; the target may hold more (a
 * merge with --force), never less or different.
 */
export async function compareBackends(
  source: StorageAdapter,
  target: StorageAdapter,
  progress: Progress,
): Promise<ComparisonReport> {
  const report: ComparisonReport = {
    documents: emptyCounts(),
    journals: 0,
    journalRecords: 0,
    normalized: [],
    skippedCorrupt: [],
    mismatches: [],
    sourceChecksum: '',
    targetChecksum: '',
  };
  const sourceItems = new ItemChecksums();
  const targetItems = new ItemChecksums();
  const counts = await countDocuments(source);
  progress.start('verify', totalDocuments(counts));
  let done = 0;
  for (const collection of COLLECTIONS) {
    for await (const id of listAll(source, collection)) {
      progress.update(++done, `${report.journalRecords} journal records`);
      const item = `${collection}/${id}`;
      const original = await source.getDocument(collection, id);
      if (original === null) continue;
      const expected = canonicalDocument(collection, id, original);
      if (!expected.ok) {
        report.skippedCorrupt.push(item);
        continue;
      }
      const copied = await target.getDocument(collection, id);
      const actual = copied === null ? null : canonicalDocument(collection, id, copied);
      sourceItems.add(item, `${expected.revision}\n${expected.text}`);
      if (actual?.ok) targetItems.add(item, `${actual.revision}\n${actual.text}`);
      if (copied === null || actual === null) {
        report.mismatches.push({ item, problem: 'missing in the target' });
      } else if (!actual.ok) {
        report.mismatches.push({
          item,
          problem: `does not decode in the target: ${actual.reason}`,
        });
      } else if (actual.revision !== expected.revision) {
        report.mismatches.push({
          item,
          problem: `revision ${actual.revision} in the target, ${expected.revision} in the source`,
        });
      } else if (actual.text === expected.text) {
        report.documents[collection]++;
      } else if (sameDocument(collection, id, original, copied)) {
        report.documents[collection]++;
        report.normalized.push(item);
      } else {
        report.mismatches.push({ item, problem: 'its content differs' });
      }
      if (collection === 'sessions') {
        await compareJournals(source, target, id, report, sourceItems, targetItems);
      }
    }
  }
  await progress.stop();
  report.sourceChecksum = sourceItems.digest();
  report.targetChecksum = targetItems.digest();
  return report;
}

async function compareJournals(
  source: StorageAdapter,
  target: StorageAdapter,
  sessionId: string,
  report: ComparisonReport,
  sourceItems: ItemChecksums,
  targetItems: ItemChecksums,
): Promise<void> {
  const copiedRuns = new Set(await target.listLogs(sessionId));
  for (const runId of await source.listLogs(sessionId)) {
    const item = `journal ${sessionId}/${runId}`;
    const expected = await collect(readAllRecords(source, sessionId, runId));
    sourceItems.add(item, expected.text);
    if (!copiedRuns.has(runId)) {
      report.mismatches.push({ item, problem: 'missing in the target' });
      continue;
    }
    const actual = await collect(readAllRecords(target, sessionId, runId));
    targetItems.add(item, actual.text);
    if (actual.text === expected.text) {
      report.journals++;
      report.journalRecords += expected.count;
    } else {
      report.mismatches.push({ item, problem: 'its records differ' });
    }
  }
}

/** The records as `sequence\ntext` lines (a record's text is JSON: it holds no newline). */
async function collect(
  records: AsyncIterable<{ sequence: number; text: string }>,
): Promise<{ text: string; count: number }> {
  const lines: string[] = [];
  for await (const record of records) lines.push(`${record.sequence}\n${record.text}`);
  return { text: lines.join('\n'), count: lines.length };
}

/**
 * A checksum over named items that does not depend on the order a backend lists them in
 * (fs and Redis list in different orders): one SHA-256 per item, then one over the sorted
 * names and item hashes.
 */
class ItemChecksums {
  private readonly items: Array<[string, string]> = [];

  add(name: string, content: string): void {
    this.items.push([name, createHash('sha256').update(content).digest('hex')]);
  }

  digest(): string {
    const hash = createHash('sha256');
    this.items.sort(([left], [right]) => (left < right ? -1 : left > right ? 1 : 0));
    for (const [name, itemHash] of this.items) hash.update(`${name}\n${itemHash}\n`);
    return hash.digest('hex');
  }
}
