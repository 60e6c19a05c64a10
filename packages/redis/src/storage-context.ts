import { randomBytes } from 'node:crypto';
import type { RedisClient } from './connection.js';
import { withDeadline } from './deadline.js';
import { toKeepsakeError } from './errors.js';
import type { KeyLayout } from './keys.js';
import type { ScriptRunner } from './script-runner.js';

/**
 * What the adapter's parts share: the client, the key layout, the script runner, and
 * whether the server is standalone (then a script may also write the namespace's keys, so
 * a document, its registry entry and its index entry change in one atomic step; on Cluster
 * those keys live on another slot and are written by a command of their own).
 */
export interface StorageContext {
  readonly client: RedisClient;
  readonly keys: KeyLayout;
  readonly scripts: ScriptRunner;
  readonly standalone: boolean;
  /** A token no other write of any process uses: lets a script recognise a resent write. */
  nextWriteToken(): string;
  /** Runs a plain command with its failure typed, within the batch deadline (Cluster). */
  command<T>(operation: string, call: () => Promise<T>): Promise<T>;
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
