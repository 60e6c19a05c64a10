import { S3Client } from '@aws-sdk/client-s3';
import {
  type AdapterCapabilities,
  type AppendLogResult,
  BackendError,
  type Collection,
  type DeleteOptions,
  type DocumentWrite,
  type IdPage,
  type IndexPage,
  type ListDocumentsOptions,
  type LogDurability,
  type LogReadResult,
  type LogRecordInput,
  type PutResult,
  type QuarantinedDocument,
  type SessionSummary,
  type StorageAdapterV1,
  type StoredDocument,
  type WriteOptions,
} from '@keepsake/core';
import { ensureBucket, type ProbeReport, probeConditionalWrites } from './capability-probe.js';
import { DocumentStore } from './document-store.js';
import { ADAPTER_NAME, S3CapabilityError } from './errors.js';
import { IndexStore } from './index-store.js';
import { JournalStore } from './journal-store.js';
import { KeyLayout } from './keys.js';
import { type ResolvedS3AdapterOptions, resolveOptions, type S3AdapterOptions } from './options.js';
import { S3OwnerLiveness } from './owner-liveness.js';
import { QuarantineStore } from './quarantine-store.js';
import { refuseWrites } from './read-only.js';
import { readOnlyRequests } from './read-only-requests.js';
import { S3Requests } from './requests.js';
import type { StorageContext } from './storage-context.js';
import { writeTokens } from './write-tokens.js';

/**
 * Probes that passed, per client and bucket: adapters sharing a client (one per namespace
 * on a server, a restart in a test) probe the endpoint once, not once each.
 */
const probed = new WeakMap<S3Client, Map<string, ProbeReport>>();

/** The capabilities of an adapter configured with `unsafeSingleWriter` or not (H1). */
export function s3Capabilities(unsafeSingleWriter: boolean): AdapterCapabilities {
  return {
    // B3: a PUT that S3 acknowledged is stored (as durably as the service stores objects).
    durability: 'acknowledged',
    conditionalWrites: !unsafeSingleWriter,
    sharedAcrossProcesses: !unsafeSingleWriter,
    // Every save is a full PUT: S3 objects cannot be appended to.
    appendDeltas: false,
    // One segment object per append (or batch): O(records), never the journal so far.
    nativeAppend: true,
    // Each run's appends are its own objects: concurrent appends share no flush.
    groupCommit: false,
    // B7: a save's summary rides in its document's metadata: one PUT per indexed save.
    indexWithDocument: true,
    clusterSafeKeys: false,
    gaps: unsafeSingleWriter
      ? [
          {
            clause: 'B4',
            reason:
              'unsafeSingleWriter: the endpoint ignores conditional writes, so revisions are checked by this process only; writers in other processes can overwrite each other',
          },
        ]
      : [],
  };
}

/**
 * The S3 adapter. `open()` checks the bucket and probes the endpoint's conditional writes,
 * and fails with `S3CapabilityError` when they cannot be trusted (unless
 * `unsafeSingleWriter`), so a server that would lose concurrent updates is reported at
 * startup.
 */
export class S3Adapter implements StorageAdapterV1 {
  readonly specificationVersion = 'v1' as const;
  readonly name = ADAPTER_NAME;
  readonly capabilities: AdapterCapabilities;
  readonly keys: KeyLayout;
  readonly client: S3Client;
  private readonly owned: boolean;
  private readonly requests: S3Requests;
  private readonly documents: DocumentStore;
  private readonly index: IndexStore;
  private readonly journals: JournalStore;
  private readonly quarantine: QuarantineStore;
  private opening: Promise<ProbeReport> | null = null;
  private closing: Promise<void> | null = null;
  private conditionsChecked = false;
  private readonly options: ResolvedS3AdapterOptions;
  /** F1, E9: present when the adapter makes its own client (see owner-liveness.ts). */
  readonly liveness?: S3OwnerLiveness;

  constructor(options: ResolvedS3AdapterOptions) {
    this.options = options;
    this.capabilities = s3Capabilities(options.unsafeSingleWriter);
    this.keys = new KeyLayout(options.prefix);
    this.owned = options.client === null;
    this.client = options.client ?? new S3Client(clientConfig(options));
    this.requests = this.requestsWith(options.compatibility);
    const context: StorageContext = {
      requests: this.requests,
      keys: this.keys,
      nextWriteToken: writeTokens(),
      checksConditionsItself: () => this.conditionsChecked,
    };
    // Each needs the other: an indexed save's long summary is written as an entry, and an
    // entry repaired by core names the version the documents last wrote.
    this.index = new IndexStore(context, (sessionId) => this.documents.knownEtag(sessionId));
    this.documents = new DocumentStore(context, (summary, etag) =>
      this.index.putFor(summary, etag),
    );
    this.journals = new JournalStore(context, options.journal);
    this.quarantine = new QuarantineStore(context);
    if (this.owned && !options.readOnly && options.ownerLease !== null) {
      this.liveness = new S3OwnerLiveness(this.requests, this.keys.root, options.ownerLease);
    }
  }

  private requestsWith(compatibility: ResolvedS3AdapterOptions['compatibility']): S3Requests {
    const { bucket, requestTimeoutMs, retry } = this.options;
    const requests = new S3Requests(this.client, bucket, compatibility, requestTimeoutMs, retry);
    // Read-only: GET, HEAD and LIST only, whatever asks (read-only-requests.ts).
    return this.options.readOnly ? readOnlyRequests(requests) : requests;
  }

  /** Checks the bucket and probes conditional writes; idempotent. A failed attempt can be retried. */
  async open(): Promise<void> {
    await this.probeReport();
  }

  /** What the probe at `open()` found (opening the adapter if it is not open yet). */
  probeReport(): Promise<ProbeReport> {
    this.assertNotClosed('open');
    this.opening ??= this.checkEndpoint().catch((error: unknown) => {
      this.opening = null;
      throw error;
    });
    return this.opening;
  }

  private get endpointName(): string {
    return this.options.endpoint ?? `the S3 endpoint of region ${this.options.region}`;
  }

  private async checkEndpoint(): Promise<ProbeReport> {
    const { bucket, compatibility, unsafeSingleWriter } = this.options;
    const probeKey = `${bucket}\n${compatibility}\n${unsafeSingleWriter}\n${this.options.readOnly}`;
    let report = probed.get(this.client)?.get(probeKey);
    if (report === undefined) {
      report = await this.probeEndpoint();
      const reports = probed.get(this.client) ?? new Map<string, ProbeReport>();
      reports.set(probeKey, report);
      probed.set(this.client, reports);
    }
    // Unsafe single-writer mode on an endpoint that ignores conditions: check them here.
    this.conditionsChecked = report.problems.length > 0;
    // Read-only: a prefix without an index is left without one (a listing rebuilds it).
    if (!this.options.readOnly) await this.index.start();
    // Before any run can record this owner: a missing lease then means a closed adapter.
    await this.liveness?.start(clientConfig(this.options), this.options.requestTimeoutMs);
    return report;
  }

  private async probeEndpoint(): Promise<ProbeReport> {
    const { bucket, createBucket, compatibility, unsafeSingleWriter, readOnly } = this.options;
    if (!(await ensureBucket(this.requests, createBucket && !readOnly))) {
      throw new S3CapabilityError(
        'bucket',
        this.endpointName,
        `open: the bucket "${bucket}" does not exist (create it, or set the option \`createBucket: true\`)`,
      );
    }
    // Read-only: the probe writes a scratch object, and nothing will be written to need it.
    if (readOnly)
      return { ifNoneMatch: false, ifMatch: false, needsUnquotedIfMatch: false, problems: [] };
    const report = await probeConditionalWrites(
      this.requests,
      this.keys,
      compatibility,
      this.requestsWith('ceph-rgw'),
    );
    if (report.problems.length > 0) {
      const quirk = report.problems.find((problem) => problem.capability === 'if-match-quoted');
      if (quirk !== undefined || !unsafeSingleWriter) {
        const first = quirk ?? report.problems[0]!;
        throw new S3CapabilityError(
          first.capability,
          this.endpointName,
          `open: ${this.endpointName} does not honour conditional writes: ${report.problems
            .map((problem) => problem.message)
            .join(
              '; ',
            )}${quirk === undefined ? '. Concurrent saves would overwrite each other; if only ONE process ever writes this prefix, the option `unsafeSingleWriter: true` accepts it' : ''}`,
        );
      }
    }
    return report;
  }

  private assertNotClosed(operation: string): void {
    if (this.closing !== null) throw new BackendError(this.name, `${operation} (adapter closed)`);
  }

  /** Every primitive first makes sure the adapter is open (core opens it first anyway). */
  private async ready(operation: string): Promise<void> {
    this.assertNotClosed(operation);
    await (this.opening ?? this.probeReport());
  }

  async getDocument(collection: Collection, id: string): Promise<StoredDocument | null> {
    await this.ready('read a document');
    return this.documents.get(collection, id);
  }

  async hasDocument(collection: Collection, id: string): Promise<boolean> {
    await this.ready('read a document');
    return this.documents.has(collection, id);
  }

  async putDocument(
    collection: Collection,
    id: string,
    write: DocumentWrite,
    options: WriteOptions,
  ): Promise<PutResult> {
    await this.ready('write a document');
    return this.documents.put(collection, id, write, options);
  }

  async deleteDocument(
    collection: Collection,
    id: string,
    options: DeleteOptions,
  ): Promise<PutResult> {
    await this.ready('delete a document');
    return this.documents.delete(collection, id, options);
  }

  async listDocuments(collection: Collection, options: ListDocumentsOptions): Promise<IdPage> {
    await this.ready('list documents');
    return this.documents.list(collection, options);
  }

  async quarantineDocument(collection: Collection, id: string, reason: string): Promise<string> {
    await this.ready('quarantine a document');
    return this.quarantine.quarantine(collection, id, reason);
  }

  async listQuarantined(): Promise<QuarantinedDocument[]> {
    await this.ready('list quarantined documents');
    return this.quarantine.list();
  }

  async readQuarantined(location: string): Promise<string | null> {
    await this.ready('read quarantined bytes');
    return this.quarantine.read(location);
  }

  /** `durable` changes nothing: an acknowledged PUT is as durable as S3 makes it. */
  async putIndexEntry(summary: SessionSummary, _options?: { durable: boolean }): Promise<void> {
    await this.ready('write the index');
    await this.index.put(summary);
  }

  async deleteIndexEntry(id: string, _options?: { durable: boolean }): Promise<void> {
    await this.ready('write the index');
    await this.index.delete(id);
  }

  async replaceIndex(summaries: SessionSummary[], _options?: { durable: boolean }): Promise<void> {
    await this.ready('write the index');
    await this.index.replace(summaries);
  }

  async listIndex(options: { cursor: string | null; limit: number }): Promise<IndexPage> {
    await this.ready('read the index');
    return this.index.list(options);
  }

  async appendLog(
    sessionId: string,
    runId: string,
    records: LogRecordInput[],
    options: { durability: LogDurability },
  ): Promise<AppendLogResult> {
    await this.ready('append to a journal');
    return this.journals.append(sessionId, runId, records, options.durability);
  }

  async readLog(
    sessionId: string,
    runId: string,
    options: { afterSequence: number; limit: number },
  ): Promise<LogReadResult> {
    await this.ready('read a journal');
    return this.journals.read(sessionId, runId, options);
  }

  async listLogs(sessionId: string): Promise<string[]> {
    await this.ready('list journals');
    return this.journals.list(sessionId);
  }

  async deleteLogs(sessionId: string, _options?: { durable: boolean }): Promise<void> {
    await this.ready('delete journals');
    await this.journals.deleteAll(sessionId);
  }

  async deleteLog(
    sessionId: string,
    runId: string,
    _options?: { durable: boolean },
  ): Promise<void> {
    await this.ready('delete a journal');
    await this.journals.delete(sessionId, runId);
  }

  /** C1: every acknowledged PUT is stored; what waits is a journal batch window, written now. */
  async sync(): Promise<void> {
    await this.ready('sync');
    await this.journals.flushAll();
  }

  /** Writes what waits, then lets go of the client the adapter made. Idempotent. */
  close(): Promise<void> {
    this.closing ??= this.shutDown();
    return this.closing;
  }

  private async shutDown(): Promise<void> {
    try {
      if (this.opening !== null) await this.journals.flushAll();
    } finally {
      this.journals.stopTimers();
      await this.liveness?.stop();
      if (this.owned) this.client.destroy();
    }
  }
}

function clientConfig(options: ResolvedS3AdapterOptions) {
  return {
    region: options.region,
    forcePathStyle: options.forcePathStyle,
    ...(options.endpoint === null ? {} : { endpoint: options.endpoint }),
    ...(options.credentials === null
      ? {}
      : {
          credentials: {
            accessKeyId: options.credentials.accessKeyId,
            secretAccessKey: options.credentials.secretAccessKey,
            ...(options.credentials.sessionToken === undefined
              ? {}
              : { sessionToken: options.credentials.sessionToken }),
          },
        }),
    // Retries are the adapter's own: it knows which writes may be resent as they are.
    maxAttempts: 1,
    // The newer flexible checksums are not understood by every S3-compatible server (Ceph
    // 16, older MinIO); the SDK still adds what an operation requires.
    requestChecksumCalculation: 'WHEN_REQUIRED' as const,
    responseChecksumValidation: 'WHEN_REQUIRED' as const,
  };
}

/** Creates the S3 adapter; options are validated here (InvalidConfigError). */
export function s3Adapter(options: S3AdapterOptions): S3Adapter {
  const resolved = resolveOptions(options);
  const adapter = new S3Adapter(resolved);
  return resolved.readOnly ? refuseWrites(adapter, 'The s3 adapter') : adapter;
}

/** Creates the adapter and opens it: a missing bucket or an unsafe endpoint fails here. */
export async function openS3Adapter(options: S3AdapterOptions): Promise<S3Adapter> {
  const adapter = s3Adapter(options);
  try {
    await adapter.open();
  } catch (error) {
    await adapter.close().catch(() => undefined);
    throw error;
  }
  return adapter;
}
