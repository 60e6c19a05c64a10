import { randomBytes } from 'node:crypto';
import type { RedisClient } from './connection.js';
import { withDeadline } from './deadline.js';
import { toKeepsakeError } from './errors.js';
import type { KeyLayout } from './keys.js';
import type { ScriptRunner } from './script-runner.js';

/** One connection (a `Cluster`: one per node) and the script runner that writes on it. */
export interface Lane {
  readonly client: RedisClient;
  readonly scripts: ScriptRunner;
}

/**
 * What the adapter's parts share: the connections, the key layout, and whether the server
 * is standalone (then a script may also write the namespace's keys, so a document, its
 * registry entry and its index entry change in one atomic step; on Cluster those keys live
 * on another slot and are written by a command of their own).
 *
 * Commands about one hash tag (a session's document, journals and index entry; a run
 * record; a thread's checkpoints) always take the lane `lane(tag)` picks, so the commands
 * of one session leave, and are run, in the order they were sent; namespace-wide commands
 * take `main`. Commands on different lanes have no order between them until one's reply
 * has arrived, which is all core asks: it awaits a write before the next that depends on it.
 */
export interface StorageContext {
  readonly main: Lane;
  lane(tag: string): Lane;
  readonly keys: KeyLayout;
  readonly standalone: boolean;
  /** A token no other write of any process uses: lets a script recognise a resent write. */
  nextWriteToken(): string;
  /** Runs a plain command with its failure typed, within the batch deadline (Cluster). */
  command<T>(operation: string, call: () => Promise<T>): Promise<T>;
}

/** Picks a lane by the tag's FNV-1a hash: the same tag, the same lane, for the adapter's life. */
export function laneChooser(lanes: readonly Lane[]): (tag: string) => Lane {
  if (lanes.length === 1) {
    const only = lanes[0]!;
    return () => only;
  }
  return (tag) => {
    let hash = 0x811c9dc5;
    for (let index = 0; index < tag.length; index++) {
      hash = Math.imul(hash ^ tag.charCodeAt(index), 0x01000193);
    }
    return lanes[(hash >>> 0) % lanes.length]!;
  };
}

export function writeTokens(): () => string {
  const instance = randomBytes(9).toString('base64url');
  let counter = 0;
  return () => `${instance}.${(counter++).toString(36)}`;
}

/**
 * Runs a plain command, with its failure typed (retryable when the connection failed), and,
 * with `deadlineMs`, failed as unavailable when no reply came within it.
 */
export function commandRunner(deadlineMs: number | null) {
  return async <T>(operation: string, call: () => Promise<T>): Promise<T> => {
    try {
      const work = call();
      return await (deadlineMs === null ? work : withDeadline(work, deadlineMs, operation));
    } catch (error) {
      throw toKeepsakeError(error, operation);
    }
  };
}
