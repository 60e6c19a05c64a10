import { join } from 'node:path';
import type { AdapterContext } from './context.js';
import { isNotFound, toBackendError } from './errors.js';
import { LOG_SUFFIX } from './log-file.js';
import { scanLog } from './log-scan.js';
import { batchesInFrames, type PendingBatch } from './pending-batches.js';
import { decodeLogEntry } from './records.js';

/**
 * How many journals this process keeps following in other processes' logs, and for how long
 * after their last read. While followed, a journal's new log entries are kept (until a read
 * finds them in its file), whoever's read moves the cursors; so a journal read once and then
 * never again must stop being followed, or its entries would pile up for as long as the
 * other process streams into it. A journal read again after it dropped out costs one scan of
 * the logs from their start.
 */
const FOLLOWED_JOURNALS = 256;
const FOLLOW_MS = 10_000;

interface FollowedJournal {
  readonly sessionId: string;
  readonly runId: string;
  readonly readAt: number;
}

/** How far one log has been read, and the batches found there that a journal file lacked. */
interface LogCursor {
  offset: number;
  readonly batches: Map<string, PendingBatch[]>;
}

/**
 * E2 across processes. A `group` append of another process resolves once its frames are
 * durable in that process's group-commit log; its journal file gets them in bulk up to 50 ms
 * later, or much later when that write stalls or fails. A reader here that reads only the
 * file would miss appends already acknowledged there. So while a journal's lock is held by
 * anyone but this adapter's own writer, a read first takes what the group-commit logs of
 * every other process (and every other adapter of this process) hold for it, and only then
 * reads the file (JournalStore.read says why in that order).
 *
 * Logs are read incrementally: one cursor per log, shared by every journal followed here, so
 * a reader tailing a stream reads each new log entry once, not once per poll and journal.
 * Only the batches the journal file did not hold at the last read are kept.
 */
export class OtherProcessLogs {
  private readonly context: AdapterContext;
  private readonly isOwnLog: (name: string) => boolean;
  private readonly cursors = new Map<string, LogCursor>();
  /** By journal key, least recently read first. */
  private readonly followed = new Map<string, FollowedJournal>();
  /** Scans run one at a time: they move shared cursors. */
  private scanning: Promise<unknown> = Promise.resolve();

  constructor(context: AdapterContext, isOwnLog: (name: string) => boolean) {
    this.context = context;
    this.isOwnLog = isOwnLog;
  }

  /** The journal's batches in the logs of other processes, as the logs hold them now. */
  batchesOf(sessionId: string, runId: string): Promise<PendingBatch[]> {
    const scan = this.scanning.then(() => this.scan(sessionId, runId));
    this.scanning = scan.catch(() => undefined);
    return scan;
  }

  /**
   * The journal file was read after `batchesOf` and holds incarnation `nonce` up to
   * `lastSequence` (nonce null: no journal): batches it holds, or of an older incarnation,
   * are never needed again (a file only grows within one incarnation).
   */
  settle(sessionId: string, runId: string, nonce: string | null, lastSequence: number): void {
    const key = journalKey(sessionId, runId);
    for (const cursor of this.cursors.values()) {
      const batches = cursor.batches.get(key);
      if (batches === undefined) continue;
      const needed = batches.filter(
        (batch) => batch.nonce === nonce && (batch.records.at(-1)?.sequence ?? 0) > lastSequence,
      );
      if (needed.length === 0) cursor.batches.delete(key);
      else cursor.batches.set(key, needed);
    }
  }

  private async scan(sessionId: string, runId: string): Promise<PendingBatch[]> {
    const key = journalKey(sessionId, runId);
    const names = await this.otherLogs();
    for (const name of this.cursors.keys()) if (!names.includes(name)) this.cursors.delete(name);
    const now = performance.now();
    this.unfollowIdle(now);
    const newlyFollowed = !this.followed.has(key);
    this.follow(key, { sessionId, runId, readAt: now });
    if (newlyFollowed) {
      // What the shared cursors passed before this journal was followed, for it alone.
      for (const [name, cursor] of this.cursors) {
        const only = (entryKey: string) => entryKey === key;
        await this.read(name, cursor, 0, only, cursor.offset);
      }
    }
    const found: PendingBatch[] = [];
    for (const name of names) {
      const cursor = this.cursors.get(name) ?? { offset: 0, batches: new Map() };
      const offset = await this.read(name, cursor, cursor.offset, (entryKey) =>
        this.followed.has(entryKey),
      );
      if (offset === null) {
        this.cursors.delete(name);
        continue;
      }
      cursor.offset = offset;
      this.cursors.set(name, cursor);
      found.push(...(cursor.batches.get(key) ?? []));
    }
    return found;
  }

  /** Scans one log from `from`, keeping the batches of the journals `wanted` says. */
  private read(
    name: string,
    cursor: LogCursor,
    from: number,
    wanted: (key: string) => boolean,
    until?: number,
  ): Promise<number | null> {
    const path = join(this.context.layout.logDirectory, name);
    const visit = (payload: Uint8Array) => {
      const entry = decodeLogEntry(payload);
      if (entry === null) return;
      const key = journalKey(entry.sessionId, entry.runId);
      const journal = this.followed.get(key);
      // Ids are checked, not only the key: a damaged entry could spell a key of two others.
      if (journal === undefined || journal.sessionId !== entry.sessionId) return;
      if (journal.runId !== entry.runId || !wanted(key)) return;
      const batches = cursor.batches.get(key) ?? [];
      batches.push(...batchesInFrames(entry.nonce, entry.frames));
      cursor.batches.set(key, batches);
    };
    return scanLog(this.context.fileSystem, path, from, visit, until);
  }

  /** The logs in `wal/` other than this adapter's own, sorted by name. */
  private async otherLogs(): Promise<string[]> {
    const directory = this.context.layout.logDirectory;
    let names: string[];
    try {
      names = await this.context.fileSystem.readdir(directory);
    } catch (error) {
      if (isNotFound(error)) return [];
      throw toBackendError(error, 'list group-commit logs');
    }
    return names.filter((name) => name.endsWith(LOG_SUFFIX) && !this.isOwnLog(name)).sort();
  }

  /** Marks the journal read now (the last in `followed`), within FOLLOWED_JOURNALS. */
  private follow(key: string, journal: FollowedJournal): void {
    this.followed.delete(key);
    this.followed.set(key, journal);
    const [oldest] = this.followed.keys();
    if (this.followed.size > FOLLOWED_JOURNALS && oldest !== undefined) this.unfollow(oldest);
  }

  /** Stops following journals not read for FOLLOW_MS (the least recently read come first). */
  private unfollowIdle(now: number): void {
    for (const [key, journal] of this.followed) {
      if (now - journal.readAt < FOLLOW_MS) return;
      this.unfollow(key);
    }
  }

  private unfollow(key: string): void {
    this.followed.delete(key);
    for (const cursor of this.cursors.values()) cursor.batches.delete(key);
  }
}

/** Session and run ids never hold a `/` (A1), so the pair spells one key. */
function journalKey(sessionId: string, runId: string): string {
  return `${sessionId}/${runId}`;
}
