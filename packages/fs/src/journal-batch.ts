import type { AppendLogResult, LogDurability } from '@keepsake/core';

/** One `appendLog` call's records, framed, on their way to a journal. */
export interface PendingAppend {
  readonly firstSequence: number;
  readonly lastSequence: number;
  readonly frame: Uint8Array;
  readonly durability: LogDurability;
}

export interface QueuedAppend extends PendingAppend {
  resolve(result: AppendLogResult): void;
  reject(error: unknown): void;
}

/**
 * The next batch from the front of `queue`: appends that arrived while the last one was
 * written, at most `limitBytes` (one append alone may exceed it) so a large event does not
 * drag small ones into one long write. An `each` append is always a batch of its own.
 */
export function takeBatch(queue: QueuedAppend[], limitBytes: number): QueuedAppend[] {
  const first = queue.shift() as QueuedAppend;
  const batch = [first];
  if (first.durability === 'each') return batch;
  let bytes = first.frame.length;
  while (queue.length > 0) {
    const next = queue[0] as QueuedAppend;
    if (next.durability === 'each' || bytes + next.frame.length > limitBytes) break;
    bytes += next.frame.length;
    batch.push(queue.shift() as QueuedAppend);
  }
  return batch;
}
