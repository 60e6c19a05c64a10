import type { AdapterContext } from './context.js';
import { isNotFound, toBackendError } from './errors.js';
import { isOwnerAlive } from './file-lock.js';
import { LOG_SUFFIX } from './log-file.js';
import { replayDeadLogs } from './log-replay.js';

/**
 * How long a look that found no dead process's log holds for reads (takeovers always look).
 * A read may show a just-killed process's last appends up to this much later; recovering
 * a dead run (F1) waits for its grace period, far longer.
 */
const READ_RECHECK_MS = 250;

/** `<pid>-<token>-<n>.log`, as group-commit-log.ts names its logs. */
const LOG_NAME = /^(\d+)-([0-9a-f]+)-\d+\.log$/;

/**
 * E2/F1 across processes. Group appends reach their journal file in bulk, after the log
 * made them durable, so a process that dies leaves its latest appends only in its
 * group-commit log. `open()` replays the logs of dead processes; a process that was already
 * running replays them too (`catchUp`) before it reads a journal or takes one over, so it
 * never recovers or continues a journal without a dead process's acknowledged appends.
 * Looking costs one `readdir` while no process has died; reads look at most every
 * READ_RECHECK_MS.
 */
export class DeadLogWatch {
  private readonly context: AdapterContext;
  /** Logs whose header names another host: theirs to replay, never read again here. */
  private readonly foreign = new Set<string>();
  private replaying: Promise<void> | null = null;
  /**
   * Dead processes' logs a replay that began after they were listed left in place: without
   * a readable header (a process that died creating its log), so they hold no appends (or
   * `.log` files not named as this adapter names logs, which no writer of it writes).
   */
  private readonly inert = new Set<string>();
  /** When a look last found nothing to replay (or replayed it all). */
  private clearAt = Number.NEGATIVE_INFINITY;

  constructor(context: AdapterContext) {
    this.context = context;
  }

  /**
   * Replays the logs of dead processes on this host, when there may be any. `forRead`: a
   * look that found nothing less than READ_RECHECK_MS ago is taken as still true.
   */
  async catchUp(forRead = false): Promise<void> {
    if (this.replaying === null) {
      if (forRead && performance.now() - this.clearAt < READ_RECHECK_MS) return;
      const lookedAt = performance.now();
      if ((await this.candidates()).length === 0) {
        this.clearAt = lookedAt;
        return;
      }
    }
    this.replaying ??= this.startReplay();
    await this.replaying;
  }

  /**
   * Under a journal's freshly taken lock: the logs of dead processes no replay has yet
   * looked at (see `replayFromNow`). A writer that died holding the lock may have left
   * acknowledged appends of this journal in one of them only; none of them, and the journal
   * file holds all of them. One `readdir` (synchronous on a local disk) while no process died.
   */
  async unreplayed(): Promise<string[]> {
    const candidates = await this.candidates();
    // Forgotten once gone from the directory, so the set stays as small as the directory.
    for (const name of this.inert) if (!candidates.includes(name)) this.inert.delete(name);
    return candidates.filter((name) => !this.inert.has(name));
  }

  /**
   * Replays the logs of dead processes with a replay that begins after this call (one in
   * flight may have listed the logs before a process died), and counts `looked` (names
   * listed before this call) as looked at: a dead process's log a finished replay left in
   * place holds nothing to replay (it has no readable header), and a dead process writes no
   * more. A failed replay throws its typed error (BackendError), and marks nothing.
   */
  async replayFromNow(looked: readonly string[]): Promise<void> {
    const running = this.replaying;
    // Its failure is its own callers'; this call replays again below and reports its own.
    if (running !== null) await running.catch(() => undefined);
    // One started meanwhile began after this call: as good as a new one.
    this.replaying ??= this.startReplay();
    await this.replaying;
    for (const name of looked) this.inert.add(name);
  }

  private startReplay(): Promise<void> {
    const lookedAt = performance.now();
    const replaying = replayDeadLogs(this.context, this.foreign)
      .then(() => {
        this.clearAt = lookedAt;
      })
      .finally(() => {
        if (this.replaying === replaying) this.replaying = null;
      });
    return replaying;
  }

  /** Logs whose owner, by their name, is not a live process here (or a name not ours). */
  private async candidates(): Promise<string[]> {
    const { fileSystem, layout, segments } = this.context;
    let names: string[];
    try {
      // On a local disk at once: every takeover looks, and the directory is a cached one.
      names =
        segments.onLocalDisk && fileSystem.readdirSync !== undefined
          ? fileSystem.readdirSync(layout.logDirectory)
          : await fileSystem.readdir(layout.logDirectory);
    } catch (error) {
      if (isNotFound(error)) return [];
      throw toBackendError(error, 'list group-commit logs');
    }
    return names.filter((name) => {
      if (!name.endsWith(LOG_SUFFIX) || this.foreign.has(name)) return false;
      const owner = LOG_NAME.exec(name);
      return owner === null || !isOwnerAlive(Number(owner[1]), owner[2] as string);
    });
  }
}
