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

/** What is wrong with the checkpoint a channel's value is read from. */
export type MissingChannelSourceProblem = 'missing' | 'other-thread' | 'version';

/**
 * A2: a checkpoint reads a channel it did not change from the older checkpoint that holds
 * the value (see saver.ts), and that checkpoint is gone (quarantined or deleted: `missing`),
 * belongs to another thread or namespace (`other-thread`), or no longer holds the channel at
 * that version (`version`: it was put again under its id). The value is not in storage, so
 * the checkpoint cannot be read whole; it is reported, never answered without the channel.
 * Nothing was moved or written. Every read of a checkpoint that needs the value fails so
 * until the source is restored (`keepsake quarantine restore`) or the thread deleted.
 */
export class MissingChannelSourceError extends KeepsakeError {
  readonly threadId: string;
  readonly checkpointNamespace: string;
  readonly checkpointId: string;
  readonly channel: string;
  readonly version: number | string;
  readonly sourceCheckpointId: string;
  readonly problem: MissingChannelSourceProblem;

  constructor(options: {
    threadId: string;
    checkpointNamespace: string;
    checkpointId: string;
    channel: string;
    version: number | string;
    sourceCheckpointId: string;
    problem: MissingChannelSourceProblem;
  }) {
    const what = {
      missing: 'is not stored (quarantined or deleted)',
      'other-thread': 'belongs to another thread or namespace',
      version: 'no longer holds that version',
    }[options.problem];
    super(
      'corrupt_document',
      `Checkpoint ${options.checkpointId} of thread ${JSON.stringify(options.threadId)} (namespace ${JSON.stringify(options.checkpointNamespace)}) reads channel ${JSON.stringify(options.channel)} at version ${options.version} from checkpoint ${options.sourceCheckpointId}, which ${what}; the value is not in storage, so the checkpoint is not returned without it. Restore the source (keepsake quarantine ls / restore) or delete the thread`,
    );
    this.name = 'MissingChannelSourceError';
    this.threadId = options.threadId;
    this.checkpointNamespace = options.checkpointNamespace;
    this.checkpointId = options.checkpointId;
    this.channel = options.channel;
    this.version = options.version;
    this.sourceCheckpointId = options.sourceCheckpointId;
    this.problem = options.problem;
  }

  static override isInstance(error: unknown): error is MissingChannelSourceError {
    return (
      KeepsakeError.isInstance(error) &&
      error.code === 'corrupt_document' &&
      error.name === 'MissingChannelSourceError'
    );
  }
}
