/**
 * The group-commit log's view of a journal: what a log must write and fsync before it is
 * removed. Its own file because both the log (group-commit-log.ts) and its files
 * (log-file.ts) name it, and neither should import the other for a type.
 */

/** A journal with entries in the log: written and fsynced before the log is removed. */
export interface LogSink {
  readonly file: string;
  /** Writes the frames that so far exist only in the log to the journal file. */
  writeUnapplied(): Promise<void>;
}
