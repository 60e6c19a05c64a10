import { basename } from 'node:path';
import type { FileSystem } from './file-system.js';
import type { Layout } from './layout.js';

type DirectoryWatcher = ReturnType<NonNullable<FileSystem['watchDirectory']>>;

/**
 * E9: wakes a follower when another process appends to a run's journal, through the
 * kernel's file notifications (`FileSystem.watchDirectory`: inotify), so it reads at once
 * instead of at its next poll. Other processes' records reach the journal file when their
 * applier writes them (within about 50 ms, journal-applier.ts), which also batches the
 * wake-ups.
 *
 * It watches the session's journal directory (the run's file may not exist yet, and a
 * directory watch sees the file appear and grow); while that directory does not exist
 * either, it watches the journals directory for it. Null when the file system cannot watch.
 * Best effort by design: an error or a limit reached later stops the watch silently, and
 * the follower's poll (rarer, not gone) finds the records.
 */
export function watchJournal(
  fileSystem: FileSystem,
  layout: Layout,
  sessionId: string,
  runId: string,
  onAppend: () => void,
): (() => void) | null {
  const watchDirectory = fileSystem.watchDirectory?.bind(fileSystem);
  if (watchDirectory === undefined) return null;
  const paths = layout.journal(sessionId, runId);
  const fileName = basename(paths.file);
  const sessionDirectoryName = basename(paths.directory);
  let watcher: DirectoryWatcher | null = null;
  let stopped = false;

  const stop = () => {
    watcher?.close();
    watcher = null;
  };
  const wake = () => {
    if (!stopped) onAppend();
  };
  const watchSessionDirectory = (): boolean => {
    try {
      watcher = watchDirectory(paths.directory, (name) => {
        if (name === null || name === fileName) wake();
      });
      watcher.on('error', stop);
      return true;
    } catch {
      return false;
    }
  };
  const watchJournalsDirectory = (): boolean => {
    try {
      watcher = watchDirectory(layout.journalsDirectory, (name) => {
        if (name !== null && name !== sessionDirectoryName) return;
        stop();
        // The session's directory appeared: watch it, and look once, since its first
        // journal may have been written before the new watch began.
        if (!stopped && watchSessionDirectory()) wake();
      });
      watcher.on('error', stop);
      return true;
    } catch {
      return false;
    }
  };

  if (!watchSessionDirectory() && !watchJournalsDirectory()) return null;
  return () => {
    stopped = true;
    stop();
  };
}
