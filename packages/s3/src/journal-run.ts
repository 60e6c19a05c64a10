import type { LogRecordInput } from '@keepsake/core';

/** A segment sent whose outcome is not known yet: it is sent again, identical, before anything else. */
export interface SegmentInDoubt {
  readonly key: string;
  readonly body: string;
  readonly metadata: Record<string, string>;
  readonly token: string;
  readonly last: number;
}

/**
 * What this adapter knows of one run's journal: the last sequence stored (null: not known,
 * learn it from S3), appends acknowledged but not written yet (a batch window), a segment
 * whose PUT outcome is unknown, and a queue that runs one journal operation at a time.
 */
export class RunJournal {
  stored: number | null = null;
  /**
   * The first sequence of the last segment stored, when known: the next append checks that
   * it still exists (a journal deleted by another instance, B8), unless `stored` was just
   * learned from a LIST.
   */
  lastSegment: number | null = null;
  storedJustLearned = false;
  waiting: LogRecordInput[] = [];
  waitingBytes = 0;
  inDoubt: SegmentInDoubt | null = null;
  timer: NodeJS.Timeout | null = null;
  private tail: Promise<unknown> = Promise.resolve();

  readonly sessionId: string;
  readonly runId: string;

  constructor(sessionId: string, runId: string) {
    this.sessionId = sessionId;
    this.runId = runId;
  }

  /** The last sequence of this journal as callers see it (stored, then waiting). */
  get lastSequence(): number {
    return (this.stored ?? 0) + this.waiting.length;
  }

  /** Runs `work` after every operation queued before it has settled. */
  serialize<T>(work: () => Promise<T>): Promise<T> {
    const result = this.tail.then(work, work);
    this.tail = result.then(
      () => undefined,
      () => undefined,
    );
    return result;
  }

  /** Forgets what is waiting (the journal was deleted) and stops the timer. */
  reset(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.waiting = [];
    this.waitingBytes = 0;
    this.inDoubt = null;
    this.stored = null;
    this.lastSegment = null;
  }

  get hasUnwritten(): boolean {
    return this.waiting.length > 0 || this.inDoubt !== null;
  }
}
