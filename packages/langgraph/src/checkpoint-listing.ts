import { type AdapterDocuments, mapConcurrently, READ_CONCURRENCY } from './adapter-documents.js';
import { DocumentIds, decodeSegment, segmentCount, segmentsOf } from './document-ids.js';
import { type CheckpointDocument, checkpointDocumentSchema } from './documents.js';

/** A checkpoint found by a listing, newest first by checkpoint id. */
export interface ListedCheckpoint {
  readonly documentId: string;
  readonly checkpointId: string;
  /** Read already, when the id had to be learnt from the document (a hashed segment). */
  readonly document?: CheckpointDocument | null;
}

/**
 * Finds checkpoints by listing ids: `<thread>.<namespace>.<checkpoint>` (three segments;
 * anything else in the collection is not the saver's and is passed over). LangGraph's checkpoint ids are UUIDv6,
 * whose text sorts by time, so newest first is the ids in descending order. Ids decode from
 * the document ids alone, without a read, unless they were too long and were hashed.
 *
 * Cost: one listing of the thread (or namespace) per `list` and per `getTuple` without a
 * checkpoint id, whatever the limit: a directory read on fs, a ZRANGEBYLEX on Redis, one
 * LIST request per 1,000 ids on S3.
 */
export class CheckpointListing {
  private readonly documents: AdapterDocuments;

  constructor(documents: AdapterDocuments) {
    this.documents = documents;
  }

  async entries(threadId?: string, namespace?: string): Promise<ListedCheckpoint[]> {
    const prefix =
      threadId === undefined
        ? undefined
        : namespace === undefined
          ? DocumentIds.threadPrefix(threadId)
          : new DocumentIds(threadId, namespace).namespacePrefix;
    const ids = (await this.documents.list('checkpoints', prefix)).filter(
      (id) => segmentCount(id) === 3,
    );
    const wanted =
      threadId === undefined && namespace !== undefined
        ? new DocumentIds('', namespace).namespace
        : undefined;
    const entries = await mapConcurrently(
      ids,
      READ_CONCURRENCY,
      async (documentId): Promise<ListedCheckpoint | null> => {
        const [, namespaceSegment = '', checkpointSegment = ''] = segmentsOf(documentId);
        if (wanted !== undefined && namespaceSegment !== wanted) return null;
        const checkpointId = decodeSegment(checkpointSegment);
        if (checkpointId !== null) return { documentId, checkpointId };
        const document = await this.documents.read(
          'checkpoints',
          documentId,
          checkpointDocumentSchema,
        );
        if (document === null) return null;
        return { documentId, checkpointId: document.checkpoint_id, document };
      },
    );
    return entries
      .filter((entry): entry is ListedCheckpoint => entry !== null)
      .sort((left, right) =>
        left.checkpointId !== right.checkpointId
          ? left.checkpointId < right.checkpointId
            ? 1
            : -1
          : left.documentId < right.documentId
            ? -1
            : left.documentId > right.documentId
              ? 1
              : 0,
      );
  }

  /** The listed checkpoint's document (null when it was deleted since the listing). */
  document(entry: ListedCheckpoint): Promise<CheckpointDocument | null> {
    if (entry.document !== undefined) return Promise.resolve(entry.document);
    return this.documents.read('checkpoints', entry.documentId, checkpointDocumentSchema);
  }

  /** The newest checkpoint of one thread's namespace, or null when it has none. */
  async newest(placement: {
    threadId: string;
    namespace: string;
  }): Promise<CheckpointDocument | null> {
    for (const entry of await this.entries(placement.threadId, placement.namespace)) {
      const document = await this.document(entry);
      if (
        document !== null &&
        document.thread_id === placement.threadId &&
        document.checkpoint_ns === placement.namespace
      ) {
        return document;
      }
    }
    return null;
  }
}
