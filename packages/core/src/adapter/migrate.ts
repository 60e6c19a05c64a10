import { AlreadyExistsError } from '../errors/storage-errors.js';
import { decodeSession, encodeFull } from '../sessions/documents/document-codec.js';
import { rebuildIndex } from '../sessions/listing/session-index.js';
import { systemClock } from '../time/clock.js';
import { COLLECTIONS, type Collection, type StorageAdapter } from './adapter.js';
import { adapterCall } from './adapter-call.js';

export interface MigrationReport {
  documents: Record<Collection, number>;
  journals: number;
  journalRecords: number;
  /**
   * Documents that do not decode: left where they are (the source is never changed) and
   * not copied, so a corrupt document never enters the target unnoticed. A document of a
   * collection whose format core does not read (lifecycle, runs, checkpoints) that holds
   * deltas is listed here too: core never writes deltas there, and they cannot be folded.
   */
  skippedCorrupt: string[];
}

const PAGE = 500;
const LOG_PAGE = 10_000;

/**
 * H3: copies everything one backend holds (every document of every collection in
 * `COLLECTIONS`: sessions, retained revisions, lifecycle state, run records, checkpoints
 * and checkpoint writes; every run journal) into another, then rebuilds the
 * target's index. The target must not hold any of the same documents: nothing there is
 * ever overwritten. Stop writers on the source first; the copy is not a snapshot.
 */
export async function migrateBackend(
  source: StorageAdapter,
  target: StorageAdapter,
): Promise<MigrationReport> {
  await source.open();
  await target.open();
  const report: MigrationReport = {
    documents: Object.fromEntries(COLLECTIONS.map((collection) => [collection, 0])) as Record<
      Collection,
      number
    >,
    journals: 0,
    journalRecords: 0,
    skippedCorrupt: [],
  };
  for (const collection of COLLECTIONS) {
    for await (const id of listAll(source, collection)) {
      const stored = await adapterCall(source.name, 'read a document', () =>
        source.getDocument(collection, id),
      );
      if (stored === null) continue;
      let text = stored.base;
      if (collection !== 'sessions' && collection !== 'revisions') {
        // Bytes core does not read: moved as they are (H3), never re-encoded.
        if (stored.deltas.length > 0) {
          report.skippedCorrupt.push(`${collection}/${id}`);
          continue;
        }
      } else {
        const sessionId = collection === 'sessions' ? id : id.slice(0, id.lastIndexOf('.'));
        const decoded = decodeSession(sessionId, stored, systemClock.now());
        if (!decoded.ok) {
          report.skippedCorrupt.push(`${collection}/${id}`);
          continue;
        }
        // H3: a document stored in full moves byte for byte (a retained revision keeps the
        // revision it records); deltas are folded into one full document on the target.
        if (stored.deltas.length > 0) {
          text = encodeFull({ ...decoded.session, revision: stored.revision });
        }
      }
      const result = await adapterCall(target.name, 'write a document', () =>
        target.putDocument(
          collection,
          id,
          { kind: 'full', revision: stored.revision, text },
          {
            expectedRevision: null,
            durable: true,
          },
        ),
      );
      if (!result.ok) throw new AlreadyExistsError(`${collection}/${id}`);
      report.documents[collection]++;
      if (collection === 'sessions') await copyJournals(source, target, id, report);
    }
  }
  await rebuildIndex(target, systemClock);
  await target.sync();
  return report;
}

async function copyJournals(
  source: StorageAdapter,
  target: StorageAdapter,
  sessionId: string,
  report: MigrationReport,
): Promise<void> {
  const runIds = await adapterCall(source.name, 'list journals', () => source.listLogs(sessionId));
  for (const runId of runIds) {
    let after = 0;
    for (;;) {
      const page = await adapterCall(source.name, 'read a journal', () =>
        source.readLog(sessionId, runId, { afterSequence: after, limit: LOG_PAGE }),
      );
      if (page.records.length === 0) break;
      const result = await adapterCall(target.name, 'append to a journal', () =>
        target.appendLog(sessionId, runId, [...page.records], { durability: 'group' }),
      );
      if (!result.ok) throw new AlreadyExistsError(`journal ${sessionId}/${runId}`);
      report.journalRecords += page.records.length;
      after = page.records.at(-1)!.sequence;
      if (page.records.length < LOG_PAGE) break;
    }
    report.journals++;
  }
}

async function* listAll(adapter: StorageAdapter, collection: Collection): AsyncGenerator<string> {
  let cursor: string | null = null;
  do {
    const page = await adapterCall(adapter.name, 'list documents', () =>
      adapter.listDocuments(collection, { cursor, limit: PAGE }),
    );
    yield* page.ids;
    cursor = page.nextCursor;
  } while (cursor !== null);
}
