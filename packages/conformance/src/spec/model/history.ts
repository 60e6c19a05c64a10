/**
 * The history of one run, Jepsen style: every call, what it returned, and every lock
 * holder's entry and exit, stamped with one logical clock (an event counter, never wall
 * time). The lock check runs on the history after the round, instead of asserting inside
 * the racing tasks; the log's tail goes into every failure message.
 */

interface HolderInterval {
  readonly task: string;
  readonly id: string;
  /** When withLock was called: from then on the caller keeps the lock's entry alive. */
  readonly calledAt: number;
  enteredAt: number | null;
  exitedAt: number | null;
}

interface RenameRecord {
  readonly from: string;
  readonly to: string;
  readonly calledAt: number;
  settledAt: number | null;
  succeeded: boolean;
}

const LOG_TAIL = 80;

export class History {
  private clock = 0;
  private readonly lines: string[] = [];
  private readonly holders: HolderInterval[] = [];
  private readonly renames: RenameRecord[] = [];

  /** Appends a line to the log; returns its logical time. */
  note(line: string): number {
    const at = ++this.clock;
    this.lines.push(`#${at} ${line}`);
    return at;
  }

  /** The last lines of the log, for a failure message. */
  tail(): string {
    const skipped = this.lines.length - LOG_TAIL;
    const shown = this.lines.slice(-LOG_TAIL).join('\n');
    return skipped > 0 ? `(${skipped} earlier events)\n${shown}` : shown;
  }

  /** withLock was called; returns the functions that record entry and exit of its callback. */
  lockCalled(task: string, id: string): { entered(): void; exited(): void } {
    const interval: HolderInterval = {
      task,
      id,
      calledAt: this.note(`${task} calls withLock(${id})`),
      enteredAt: null,
      exitedAt: null,
    };
    this.holders.push(interval);
    return {
      entered: () => {
        interval.enteredAt = this.note(`${task} entered withLock(${id})`);
      },
      exited: () => {
        interval.exitedAt = this.note(`${task} leaves withLock(${id})`);
      },
    };
  }

  /** A rename was called; returns the function that records how it settled. */
  renameCalled(from: string, to: string, task: string): (succeeded: boolean) => void {
    const record: RenameRecord = {
      from,
      to,
      calledAt: this.note(`${task} rename(${from} → ${to}) called`),
      settledAt: null,
      succeeded: false,
    };
    this.renames.push(record);
    return (succeeded) => {
      record.settledAt = this.note(
        `${task} rename(${from} → ${to}) ${succeeded ? 'done' : 'failed'}`,
      );
      record.succeeded = succeeded;
    };
  }

  /**
   * D1, D2: no two holders of one lock at once. Two holders of one id never overlap. Two
   * holders of the old and the new id of a rename that went through must not overlap
   * either when one of them asked for its lock after the rename was called, before the
   * lock could have gone idle since: the rename takes its place in both ids' queues when
   * it is called, so whoever asks later waits for it, and the rename waits for whoever
   * asked earlier; the merged lock stays one while anyone (the rename, or a holder of
   * either id, from its call of withLock to its exit) is still using it. Two holders that
   * both asked before the rename was called are not a violation (they are both ahead of
   * it). Returns a description of each violation.
   */
  lockViolations(): string[] {
    const violations: string[] = [];
    const entered = this.holders.filter((holder) => holder.enteredAt !== null);
    for (const a of entered) {
      for (const b of entered) {
        if (a === b || a.enteredAt! > b.enteredAt!) continue;
        const overlap = b.enteredAt! < (a.exitedAt ?? Number.POSITIVE_INFINITY);
        if (!overlap) continue;
        const laterCall = Math.max(a.calledAt, b.calledAt);
        const rename = this.renames.find(
          (candidate) =>
            candidate.succeeded &&
            ((candidate.from === a.id && candidate.to === b.id) ||
              (candidate.from === b.id && candidate.to === a.id)) &&
            laterCall > candidate.calledAt &&
            laterCall <= this.liveUntil(candidate),
        );
        if (a.id !== b.id && rename === undefined) continue;
        const why =
          a.id === b.id
            ? 'one id'
            : `one lock since rename(${rename!.from} → ${rename!.to}) was called at #${rename!.calledAt}`;
        violations.push(
          `${a.task} held withLock(${a.id}) (asked at #${a.calledAt}) from #${a.enteredAt} to #${a.exitedAt ?? 'end'} while ${b.task} entered withLock(${b.id}) (asked at #${b.calledAt}) at #${b.enteredAt} (${why})`,
        );
      }
    }
    return violations;
  }

  /**
   * Until when the lock a rename merged was certainly in use without a break: the rename
   * itself, and every holder of either id from its call of withLock to its exit, chained.
   */
  private liveUntil(rename: RenameRecord): number {
    const intervals = [
      ...this.holders
        .filter((holder) => holder.id === rename.from || holder.id === rename.to)
        .map((holder) => [holder.calledAt, holder.exitedAt ?? Number.POSITIVE_INFINITY] as const),
    ];
    let until = rename.settledAt ?? Number.POSITIVE_INFINITY;
    let grew = true;
    while (grew) {
      grew = false;
      for (const [start, end] of intervals) {
        if (start <= until && end > until) {
          until = end;
          grew = true;
        }
      }
    }
    return until;
  }
}
