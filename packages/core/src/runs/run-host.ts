import { JournalWriter, type JournalWriterOptions } from '../journal/journal-writer.js';
import type { LockRegistry } from '../locks/lock-registry.js';
import type { ResolvedOptions } from '../options/options.js';
import type { CacheEntry } from '../sessions/session-cache.js';
import type { SaveOptions } from '../sessions/session-types.js';
import type { StoreEvent } from '../store-types.js';
import type { JournalRecord, Session } from '../validation/schemas.js';
import type { RunHandle } from './run-types.js';

/** What a run needs from its store. */
export interface RunHost {
  readonly options: ResolvedOptions;
  readonly locks: LockRegistry;
  entryFor(sessionId: string): Promise<CacheEntry>;
  /** Re-reads a session another instance changed (after a revision conflict). */
  refreshIfClean(entry: CacheEntry): Promise<RefreshOutcome>;
  /** Drops a session another instance deleted from this store's cache. */
  forgetDeleted(sessionId: string): void;
  write(entry: CacheEntry, options: SaveOptions): Promise<Session>;
  /** The run has ended (or was fenced out): the store stops counting it as live here. */
  runEnded(run: RunHandle): void;
  markTurnCompleted(sessionId: string): Promise<void>;
  emit(event: StoreEvent): void;
  /** A record this store appended: its `append` event, and its followers' wake-up (H4). */
  appended(record: JournalRecord, durationMs: number, durable: boolean): void;
}

export type RefreshOutcome = 'unchanged' | 'refreshed' | 'dirty' | 'deleted';

export function createJournalWriter(
  host: RunHost,
  sessionId: string,
  runId: string,
  extra: Pick<JournalWriterOptions, 'knownTail' | 'durability' | 'fencedByTakeover'> = {},
): JournalWriter {
  return new JournalWriter({
    ...extra,
    adapter: host.options.adapter,
    clock: host.options.clock,
    sessionId,
    runId,
    policy: host.options.journalDurability,
    maxEventBytes: host.options.limits.maxJournalEventBytes,
    // The session id comes from the writer: it follows an id rotation (D2).
    onAppend: (record, durationMs, durable) => host.appended(record, durationMs, durable),
  });
}
