import { createHash } from 'node:crypto';
import { type FileHandle, open } from 'node:fs/promises';
import {
  type AppendLogResult,
  BackendError,
  COLLECTIONS,
  type Collection,
  type IdPage,
  type IndexPage,
  type ListDocumentsOptions,
  type LogReadResult,
  type PutResult,
  type StorageAdapter,
  type StoredDocument,
} from '@keepsake/core';
import type { z } from 'zod';
import { BadExportFileError, NothingThereError, PermissionDeniedError } from '../cli-errors.js';
import { bodyLineSchema, type EndLine, headerLineSchema } from './export-format.js';

const NAME = 'export file';
const CHUNK = 1 << 20;

/** Where one line's text lies in the file. */
interface Span {
  offset: number;
  length: number;
}

interface DocumentEntry extends Span {
  revision: number;
}

interface RecordEntry extends Span {
  sequence: number;
}

/**
 * An export file as the source of core's `migrateBackend` (what `import` runs). Opening it
 * reads the whole file once, checks every line, the counts and the checksum of its `end`
 * line, and keeps only where each document and record lies; their text is read when the
 * migration asks for it. So a file far larger than memory imports, and a truncated or
 * altered one is refused before anything is written.
 */
export class ExportReader implements StorageAdapter {
  readonly specificationVersion = 'v1' as const;
  readonly name = NAME;
  readonly capabilities = {
    durability: 'process',
    conditionalWrites: false,
    sharedAcrossProcesses: true,
    appendDeltas: false,
    nativeAppend: false,
    groupCommit: false,
    clusterSafeKeys: false,
    gaps: [],
  } as const;
  private readonly documents = new Map<Collection, Map<string, DocumentEntry>>(
    COLLECTIONS.map((collection) => [collection, new Map()]),
  );
  private readonly journals = new Map<string, Map<string, RecordEntry[]>>();
  private sortedIds = new Map<Collection, string[]>();
  private handle: FileHandle | null = null;
  /** The export's `end` line, once the file was read and found whole. */
  end: EndLine | null = null;

  private readonly path: string;

  constructor(path: string) {
    this.path = path;
  }

  async open(): Promise<void> {
    if (this.handle !== null) return;
    try {
      this.handle = await open(this.path, 'r');
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') throw new NothingThereError(`No export file at ${this.path}`);
      if (code === 'EACCES' || code === 'EPERM') {
        throw new PermissionDeniedError(this.path, `cannot read the file (${code})`, {
          cause: error,
        });
      }
      throw error;
    }
    await this.scan(this.handle);
  }

  private async scan(handle: FileHandle): Promise<void> {
    const hash = createHash('sha256');
    let lineNumber = 0;
    let offset = 0;
    let pending: Buffer[] = [];
    let pendingLength = 0;
    let position = 0;
    const buffer = Buffer.allocUnsafe(CHUNK);
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, CHUNK, position);
      if (bytesRead === 0) break;
      let start = 0;
      for (;;) {
        const newline = buffer.indexOf(0x0a, start);
        if (newline === -1 || newline >= bytesRead) break;
        const piece = buffer.subarray(start, newline);
        const line = pendingLength === 0 ? piece : Buffer.concat([...pending, piece]);
        pending = [];
        pendingLength = 0;
        lineNumber++;
        if (this.end !== null) this.fail(lineNumber, 'there is a line after the end line');
        this.take(line, lineNumber, offset, hash);
        offset += line.length + 1;
        start = newline + 1;
      }
      if (start < bytesRead) {
        pending.push(Buffer.from(buffer.subarray(start, bytesRead)));
        pendingLength += bytesRead - start;
      }
      position += bytesRead;
    }
    if (pendingLength > 0) this.fail(lineNumber + 1, 'the file ends in the middle of a line');
    if (lineNumber === 0) this.fail(0, 'the file is empty');
    if (this.end === null) this.fail(lineNumber, 'it has no end line: it was cut short');
    this.checkEnd(this.end, hash.digest('hex'));
    for (const [collection, entries] of this.documents) {
      this.sortedIds.set(collection, [...entries.keys()].sort());
    }
  }

  private take(
    line: Buffer,
    lineNumber: number,
    offset: number,
    hash: ReturnType<typeof createHash>,
  ) {
    let value: unknown;
    try {
      value = JSON.parse(line.toString('utf8'));
    } catch {
      this.fail(lineNumber, 'the line is not JSON');
    }
    if (lineNumber === 1) {
      const header = headerLineSchema.safeParse(value);
      if (!header.success) this.fail(lineNumber, describe(header.error, 'the header line'));
      hash.update(line).update('\n');
      return;
    }
    const parsed = bodyLineSchema.safeParse(value);
    if (!parsed.success) this.fail(lineNumber, describe(parsed.error, 'the line'));
    const entry = parsed.data;
    if (entry.type === 'end') {
      this.end = entry;
      return;
    }
    hash.update(line).update('\n');
    const span = { offset, length: line.length };
    if (entry.type === 'document') {
      const collection = this.documents.get(entry.collection)!;
      if (collection.has(entry.id)) {
        this.fail(lineNumber, `${entry.collection}/${entry.id} appears twice`);
      }
      collection.set(entry.id, { ...span, revision: entry.revision });
      return;
    }
    if (!this.documents.get('sessions')!.has(entry.sessionId)) {
      this.fail(lineNumber, `a journal of session "${entry.sessionId}" comes before its document`);
    }
    const runs = this.journals.get(entry.sessionId) ?? new Map<string, RecordEntry[]>();
    this.journals.set(entry.sessionId, runs);
    const records = runs.get(entry.runId) ?? [];
    runs.set(entry.runId, records);
    const previous = records.at(-1);
    if (previous !== undefined && entry.sequence <= previous.sequence) {
      this.fail(
        lineNumber,
        `journal ${entry.sessionId}/${entry.runId} goes back to sequence ${entry.sequence}`,
      );
    }
    records.push({ ...span, sequence: entry.sequence });
  }

  private checkEnd(end: EndLine, checksum: string): void {
    if (end.sha256 !== checksum) {
      this.fail(null, 'its checksum does not match its content: it was changed after the export');
    }
    let journals = 0;
    let records = 0;
    for (const runs of this.journals.values()) {
      for (const entries of runs.values()) {
        journals++;
        records += entries.length;
      }
    }
    // A count the end line leaves out is zero (see endLineSchema).
    const countsDiffer = COLLECTIONS.some(
      (collection) => this.documents.get(collection)!.size !== (end.documents[collection] ?? 0),
    );
    if (countsDiffer || journals !== end.journals || records !== end.journalRecords) {
      this.fail(null, 'its counts do not match its end line');
    }
  }

  private fail(lineNumber: number | null, reason: string): never {
    throw new BadExportFileError(
      this.path,
      lineNumber === null ? reason : `line ${lineNumber}: ${reason}`,
    );
  }

  async getDocument(collection: Collection, id: string): Promise<StoredDocument | null> {
    const entry = this.documents.get(collection)?.get(id);
    if (entry === undefined) return null;
    const line = JSON.parse(await this.read(entry)) as { text: string };
    return { revision: entry.revision, base: line.text, deltas: [] };
  }

  async hasDocument(collection: Collection, id: string): Promise<boolean> {
    return this.documents.get(collection)?.has(id) ?? false;
  }

  async listDocuments(collection: Collection, options: ListDocumentsOptions): Promise<IdPage> {
    const ids = (this.sortedIds.get(collection) ?? []).filter(
      (id) => options.prefix === undefined || id.startsWith(options.prefix),
    );
    const start = options.cursor === null ? 0 : Number(options.cursor);
    const page = ids.slice(start, start + options.limit);
    const next = start + page.length;
    return { ids: page, nextCursor: next < ids.length ? String(next) : null };
  }

  async listLogs(sessionId: string): Promise<string[]> {
    return [...(this.journals.get(sessionId)?.keys() ?? [])];
  }

  async readLog(
    sessionId: string,
    runId: string,
    options: { afterSequence: number; limit: number },
  ): Promise<LogReadResult> {
    const entries = this.journals.get(sessionId)?.get(runId);
    if (entries === undefined) return { exists: false, records: [], tornTail: false };
    const start = firstAfter(entries, options.afterSequence);
    const chosen = entries.slice(start, start + options.limit);
    const first = chosen[0];
    const last = chosen.at(-1);
    if (first === undefined || last === undefined) {
      return { exists: true, records: [], tornTail: false };
    }
    // One read for the page: a run's records were written one after another.
    const bytes = await this.readBytes(first.offset, last.offset + last.length - first.offset);
    const records = chosen.map((entry) => {
      const slice = bytes.subarray(
        entry.offset - first.offset,
        entry.offset - first.offset + entry.length,
      );
      const line = JSON.parse(slice.toString('utf8')) as { text: string };
      return { sequence: entry.sequence, text: line.text };
    });
    return { exists: true, records, tornTail: false };
  }

  async listQuarantined(): Promise<never[]> {
    return [];
  }

  async listIndex(): Promise<IndexPage> {
    return { status: 'missing' };
  }

  async sync(): Promise<void> {}

  async close(): Promise<void> {
    const handle = this.handle;
    this.handle = null;
    await handle?.close();
  }

  async putDocument(): Promise<PutResult> {
    throw this.refused('write a document');
  }
  async deleteDocument(): Promise<PutResult> {
    throw this.refused('delete a document');
  }
  async quarantineDocument(): Promise<string> {
    throw this.refused('quarantine a document');
  }
  async putIndexEntry(): Promise<void> {
    throw this.refused('write the index');
  }
  async deleteIndexEntry(): Promise<void> {
    throw this.refused('write the index');
  }
  async replaceIndex(): Promise<void> {
    throw this.refused('write the index');
  }
  async appendLog(): Promise<AppendLogResult> {
    throw this.refused('append to a journal');
  }
  async deleteLogs(): Promise<void> {
    throw this.refused('delete journals');
  }
  async deleteLog(): Promise<void> {
    throw this.refused('delete a journal');
  }

  private async read(span: Span): Promise<string> {
    return (await this.readBytes(span.offset, span.length)).toString('utf8');
  }

  private async readBytes(offset: number, length: number): Promise<Buffer> {
    if (this.handle === null) throw new BackendError(NAME, 'read (the file is not open)');
    const buffer = Buffer.allocUnsafe(length);
    const { bytesRead } = await this.handle.read(buffer, 0, length, offset);
    if (bytesRead !== length) {
      throw new BackendError(NAME, `read ${this.path}: it changed while it was imported`);
    }
    return buffer;
  }

  private refused(operation: string): BackendError {
    return new BackendError(NAME, `${operation} (an export file is read-only)`);
  }
}

/** The index of the first record with a sequence above `sequence` (records are in order). */
function firstAfter(entries: readonly RecordEntry[], sequence: number): number {
  let low = 0;
  let high = entries.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (entries[middle]!.sequence <= sequence) low = middle + 1;
    else high = middle;
  }
  return low;
}

function describe(error: z.ZodError, what: string): string {
  const issue = error.issues[0];
  const path = issue?.path.length ? ` at ${issue.path.join('.')}` : '';
  return `${what} is not an export line${path}: ${issue?.message ?? 'invalid'}`;
}
