import { createHash, type Hash } from 'node:crypto';
import {
  type AppendLogResult,
  BackendError,
  type Collection,
  type DocumentWrite,
  type IdPage,
  type IndexPage,
  type LogRecordInput,
  type MigrationReport,
  type PutResult,
  type SessionSummary,
  type StorageAdapter,
  type StoredDocument,
} from '@keepsake/core';
import type { OutputStream } from '../cli-io.js';
import {
  type DocumentLine,
  type EndLine,
  EXPORT_FORMAT,
  type HeaderLine,
  type JournalLine,
} from './export-format.js';

const NAME = 'export file';

/**
 * An export file as the target of core's `migrateBackend`: every document and journal record
 * the migration writes becomes one line. The file holds no index (it is derived data: the
 * import's migration rebuilds it in the store it writes to), so the rebuild `migrateBackend`
 * ends with finds no session here and replaces nothing. Reading is not what a file being
 * written is for: the calls a migration does not make are refused.
 */
export class ExportWriter implements StorageAdapter {
  readonly specificationVersion = 'v1' as const;
  readonly name = NAME;
  readonly capabilities = {
    durability: 'process',
    conditionalWrites: false,
    sharedAcrossProcesses: false,
    appendDeltas: false,
    nativeAppend: true,
    groupCommit: false,
    clusterSafeKeys: false,
    gaps: [],
  } as const;
  private readonly hash: Hash = createHash('sha256');
  private opened = false;

  private readonly output: OutputStream;
  private readonly sourceName: string;

  constructor(output: OutputStream, sourceName: string) {
    this.output = output;
    this.sourceName = sourceName;
  }

  async open(): Promise<void> {
    if (this.opened) return;
    this.opened = true;
    const header: HeaderLine = {
      keepsake: 'export',
      format: EXPORT_FORMAT,
      source: this.sourceName,
      exportedAt: new Date().toISOString(),
    };
    await this.line(header);
  }

  async putDocument(collection: Collection, id: string, write: DocumentWrite): Promise<PutResult> {
    const line: DocumentLine = {
      type: 'document',
      collection,
      id,
      revision: write.revision,
      text: write.text,
    } as DocumentLine;
    await this.line(line);
    return { ok: true };
  }

  async appendLog(
    sessionId: string,
    runId: string,
    records: LogRecordInput[],
  ): Promise<AppendLogResult> {
    for (const record of records) {
      const line: JournalLine = {
        type: 'journal',
        sessionId,
        runId,
        sequence: record.sequence,
        text: record.text,
      };
      await this.line(line);
    }
    return { ok: true };
  }

  /** The last line: counts and the checksum of everything before it. */
  async finish(report: MigrationReport): Promise<EndLine> {
    const end: EndLine = {
      type: 'end',
      documents: endCounts(report.documents),
      journals: report.journals,
      journalRecords: report.journalRecords,
      sha256: this.hash.digest('hex'),
    };
    await this.output.write(`${JSON.stringify(end)}\n`);
    return end;
  }

  // What the index rebuild at the end of a migration asks: there is no session to index.
  async listDocuments(): Promise<IdPage> {
    return { ids: [], nextCursor: null };
  }
  async replaceIndex(_summaries: SessionSummary[]): Promise<void> {}
  async sync(): Promise<void> {}
  async close(): Promise<void> {}

  async getDocument(): Promise<StoredDocument | null> {
    throw this.refused('read a document');
  }
  async hasDocument(): Promise<boolean> {
    throw this.refused('check a document');
  }
  async deleteDocument(): Promise<PutResult> {
    throw this.refused('delete a document');
  }
  async quarantineDocument(): Promise<string> {
    throw this.refused('quarantine a document');
  }
  async listQuarantined(): Promise<never[]> {
    return [];
  }
  async putIndexEntry(): Promise<void> {}
  async deleteIndexEntry(): Promise<void> {}
  async listIndex(): Promise<IndexPage> {
    return { status: 'missing' };
  }
  async readLog(): Promise<never> {
    throw this.refused('read a journal');
  }
  async listLogs(): Promise<string[]> {
    return [];
  }
  async deleteLogs(): Promise<void> {
    throw this.refused('delete journals');
  }
  async deleteLog(): Promise<void> {
    throw this.refused('delete a journal');
  }

  private async line(value: object): Promise<void> {
    const text = `${JSON.stringify(value)}\n`;
    this.hash.update(text);
    await this.output.write(text);
  }

  private refused(operation: string): BackendError {
    return new BackendError(NAME, `${operation} (an export being written is write-only)`);
  }
}

/**
 * The end line's counts: sessions, revisions and lifecycle always; the other collections
 * only when they hold documents, so an export without them reads in an older CLI.
 */
function endCounts(documents: MigrationReport['documents']): EndLine['documents'] {
  const counts: EndLine['documents'] = {
    sessions: documents.sessions,
    revisions: documents.revisions,
    lifecycle: documents.lifecycle,
  };
  for (const collection of ['runs', 'checkpoints', 'checkpoint-writes'] as const) {
    if (documents[collection] > 0) counts[collection] = documents[collection];
  }
  return counts;
}
