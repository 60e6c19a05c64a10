import type { AdapterContext } from './context.js';
import { isNotFound, toBackendError } from './errors.js';
import { isOwnerAlive } from './file-lock.js';
import { LOG_SUFFIX } from './group-commit-log.js';
import { replayDeadLogs } from './log-replay.js';

/** `<pid>-<token>-<n>.log`, as group-commit-log.ts names its logs. */
const LOG_NAME = /^(\d+)-([0-9a-f]+)-\d+\.log$/;

/**
 * E2/F1 across processes. Group appends reach their journal file in bulk, after the log
 * made them durable, so a process that dies leaves its latest appends only in its
 * group-commit log. `open()` replays the logs of dead processes; a process that was already
 * running replays them too (`catchUp`) before it reads a journal or takes one over, so it
 * never streams, recovers or continues a journal without a dead process's acknowledged
 * appends. Looking costs one `readdir` while no process has died.
 */
export class DeadLogWatch {
  private readonly context: AdapterContext;
  /** Logs whose header names another host: theirs to replay, never read again here. */
  private readonly foreign = new Set<string>();
  private replaying: Promise<void> | null = null;

  constructor(context: AdapterContext) {
    this.context = context;
  }

  /** Replays the logs of dead processes on this host, when there may be any. */
  async catchUp(): Promise<void> {
    if (this.replaying === null && !(await this.anyCandidate())) return;
    this.replaying ??= replayDeadLogs(this.context, this.foreign)
      .then(() => undefined)
      .finally(() => {
        this.replaying = null;
      });
    await this.replaying;
  }

  /** A log whose owner, by its name, is not a live process here (or a name not ours). */
  private async anyCandidate(): Promise<boolean> {
    let names: string[];
    try {
      names = await this.context.fileSystem.readdir(this.context.layout.logDirectory);
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
