import { randomBytes } from 'node:crypto';
import type { RedisClient } from './connection.js';
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
}

export function writeTokens(): () => string {
  const instance = randomBytes(9).toString('base64url');
  let counter = 0;
  return () => `${instance}.${(counter++).toString(36)}`;
}

/** Runs a plain command, with its failure typed (retryable when the connection failed). */
export async function command<T>(operation: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw toKeepsakeError(error, operation);
  }
}
