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
      if (!(await this.anyCandidate())) {
        this.clearAt = lookedAt;
        return;
      }
    }
    const lookedAt = performance.now();
    this.replaying ??= replayDeadLogs(this.context, this.foreign)
      .then(() => {
        this.clearAt = lookedAt;
      })
      .finally(() => {
        this.replaying = null;
      });
    await this.replaying;
  }

  /** A log whose owner, by its name, is not a live process here (or a name not ours). */
  private async anyCandidate(): Promise<boolean> {
    const { fileSystem, layout, segments } = this.context;
    let names: string[];
    try {
      // On a local disk at once: every takeover looks, and the directory is a cached one.
      names =
        segments.onLocalDisk && fileSystem.readdirSync !== undefined
          ? fileSystem.readdirSync(layout.logDirectory)
          : await fileSystem.readdir(layout.logDirectory);
    } catch (error) {
      if (isNotFound(error)) return false;
      throw toBackendError(error, 'list group-commit logs');
    }
    return names.some((name) => {
      if (!name.endsWith(LOG_SUFFIX) || this.foreign.has(name)) return false;
      const owner = LOG_NAME.exec(name);
      return owner === null || !isOwnerAlive(Number(owner[1]), owner[2] as string);
    });
  }
}
