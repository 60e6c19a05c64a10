import { KeepsakeError } from '@keepsake/core';

/**
 * A2: a stored checkpoint or pending-writes document that does not parse (or does not
 * deserialize). Its bytes were moved to the adapter's quarantine, intact, before this was
 * thrown; nothing was deleted or overwritten. The next read no longer finds the document: a
 * `getTuple` without a checkpoint id then answers from the newest checkpoint still stored.
 */
export class CorruptCheckpointError extends KeepsakeError {
  readonly collection: string;
  readonly documentId: string;
  readonly quarantineLocation: string;

  constructor(collection: string, documentId: string, quarantineLocation: string, reason: string) {
    super(
      'corrupt_document',
      `Stored LangGraph document ${collection}/${documentId} does not parse (${reason}); its bytes were quarantined at ${quarantineLocation} and nothing was overwritten`,
    );
    this.name = 'CorruptCheckpointError';
    this.collection = collection;
    this.documentId = documentId;
    this.quarantineLocation = quarantineLocation;
  }

  static override isInstance(error: unknown): error is CorruptCheckpointError {
    return (
      KeepsakeError.isInstance(error) &&
      error.code === 'corrupt_document' &&
      error.name === 'CorruptCheckpointError'
    );
  }
}

/**
 * B4: a checkpoint (or a special pending write: an error, an interrupt) that other writers
 * kept replacing while this one tried to replace it, more times in a row than the saver
 * retries. Nothing of this call was written over the other writers' documents.
 */
export class CheckpointConflictError extends KeepsakeError {
  readonly documentId: string;

  constructor(documentId: string, attempts: number) {
    super(
      'revision_conflict',
      `LangGraph document ${documentId} changed under ${attempts} attempts in a row to replace it; retry the call`,
      { isRetryable: true },
    );
    this.name = 'CheckpointConflictError';
    this.documentId = documentId;
  }

  static override isInstance(error: unknown): error is CheckpointConflictError {
    return (
      KeepsakeError.isInstance(error) &&
      error.code === 'revision_conflict' &&
      error.name === 'CheckpointConflictError'
    );
  }
}
