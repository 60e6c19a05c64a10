import { join } from 'node:path';
import { currentBootId, isFromEarlierBoot } from './boot.js';
import { type AdapterContext, makeDirectory } from './context.js';
import { isNotFound, toBackendError } from './errors.js';
import { type FileHandle, readAt, writeAll } from './file-system.js';
import { decodeFrames, encodeFrame } from './framing.js';
import { isSafeId } from './id-encoding.js';
import { parseJournal } from './journal-format.js';
import { isOwnerAlive, type LockOwner, thisHost } from './lock-owner.js';
import { LOG_SUFFIX } from './log-file.js';
import { decodeJournalBatch, decodeLogEntry, decodeLogHeader, type LogEntry } from './records.js';

/** A log without a readable header younger than this may be one a live process is creating. */
const HEADERLESS_GRACE_MS = 60_000;

/** A log's header names its owner as a lock file does (lock-owner.ts). */
type LogOwner = LockOwner;

export interface OrderedEntry {
  /** Replay order: the log's creation time, its name, the entry's position. */
  readonly order: readonly [number, string, number];
  readonly entry: LogEntry;
}

/**
 * E2 after a crash: the group-commit logs of dead processes on this host (their process is
 * gone, or they were written before this boot) are replayed into their journals, then
 * removed. An entry is appended only to the journal incarnation it was written for (same
 * nonce; a deleted journal stays deleted) and only where it continues the journal's last
 * sequence, so replaying twice, or replaying what a process crash left intact, changes
 * nothing. Logs of other hosts are left to those hosts, which replay their own on restart.
 */
export async function replayDeadLogs(
  context: AdapterContext,
  foreign: Set<string> = new Set(),
): Promise<number> {
  const { fileSystem, layout } = context;
  const { deadLogs, byJournal } = await readDeadLogs(context, foreign);
  // Journals are independent: several at a time, each under its own lock (a crash with many
  // streams in flight leaves many journals to catch up, each ending with an fdatasync).
  const journals = [...byJournal.values()];
  let next = 0;
  const worker = async () => {
    while (next < journals.length) {
      const journal = journals[next++] as OrderedEntry[];
      const { sessionId, runId } = (journal[0] as OrderedEntry).entry;
      const paths = layout.journal(sessionId, runId);
      await context.locks.withLock(
        paths.lock,
        () => makeDirectory(fileSystem, paths.directory),
        () => replayInto(context, paths.file, journal),
        true,
      );
    }
  };
  const workers = Math.min(context.options.syncConcurrency, journals.length);
  await Promise.all(Array.from({ length: workers }, worker));
  for (const path of deadLogs) {
    try {
      await fileSystem.unlink(path);
    } catch (error) {
      if (!isNotFound(error)) throw toBackendError(error, `remove ${path}`);
    }
  }
  return deadLogs.length;
}

/** What the group-commit logs of dead processes on this host hold (see `replayDeadLogs`). */
export interface DeadLogs {
  /** The dead processes' logs (and old logs without a readable header). */
  readonly deadLogs: string[];
  /** Their entries by journal (`<session>/<run>`), in replay order. */
  readonly byJournal: Map<string, OrderedEntry[]>;
}

/**
 * Reads the logs of dead processes on this host and nothing else: `replayDeadLogs` appends
 * what it finds to the journals, a read-only adapter keeps it in memory (read-only-journals.ts).
 * Names of other hosts' logs are added to `foreign`.
 */
export async function readDeadLogs(
  context: AdapterContext,
  foreign: Set<string> = new Set(),
): Promise<DeadLogs> {
  const { fileSystem, layout } = context;
  let names: string[];
  try {
    names = await fileSystem.readdir(layout.logDirectory);
  } catch (error) {
    if (isNotFound(error)) return { deadLogs: [], byJournal: new Map() };
    throw toBackendError(error, 'list group-commit logs');
  }
  const bootId = await currentBootId(fileSystem);
  const deadLogs: string[] = [];
  const entries: OrderedEntry[] = [];
  for (const name of names.filter((candidate) => candidate.endsWith(LOG_SUFFIX)).sort()) {
    const path = join(layout.logDirectory, name);
    const bytes = await readOptional(context, path);
    if (bytes === null) continue;
    const payloads = decodeFrames(bytes).payloads;
    const owner = parseOwner(payloads[0] ? decodeLogHeader(payloads[0]) : null);
    if (owner === null) {
      if (await isOldFile(context, path)) deadLogs.push(path);
      continue;
    }
    if (owner.host !== thisHost) {
      foreign.add(name);
      continue;
    }
    if (!isFromEarlierBoot(owner, bootId) && isOwnerAlive(owner.pid, owner.token)) continue;
    deadLogs.push(path);
    payloads.slice(1).forEach((payload, index) => {
      const entry = decodeLogEntry(payload);
      if (entry) entries.push({ order: [owner.createdAt, name, index], entry });
    });
  }
  const byJournal = new Map<string, OrderedEntry[]>();
  for (const ordered of entries.sort((left, right) => compareOrder(left.order, right.order))) {
    const { sessionId, runId } = ordered.entry;
    if (!isSafeId(sessionId) || !isSafeId(runId)) continue;
    const key = `${sessionId}/${runId}`;
    byJournal.set(key, [...(byJournal.get(key) ?? []), ordered]);
  }
  return { deadLogs, byJournal };
}

/** Appends the entries' batches that continue the journal, then flushes it. */
async function replayInto(context: AdapterContext, path: string, journal: OrderedEntry[]) {
  let handle: FileHandle;
  try {
    handle = await context.fileSystem.open(path, 'r+');
  } catch (error) {
    if (isNotFound(error)) return;
    throw toBackendError(error, `open journal ${path}`);
  }
  try {
    const stats = await handle.stat();
    const parsed = parseJournal(await readAt(handle, stats.size, 0));
    if (parsed.nonce === null) return;
    // By first sequence; a later entry wins (a retry after a failed log write reuses numbers).
    const batches = new Map<number, { last: number; frame: Uint8Array }>();
    for (const { entry } of journal) {
      if (entry.nonce !== parsed.nonce) continue;
      for (const payload of decodeFrames(entry.frames).payloads) {
        const records = decodeJournalBatch(payload);
        const first = records?.[0]?.sequence;
        const last = records?.at(-1)?.sequence;
        if (first === undefined || last === undefined) break;
        batches.set(first, { last, frame: encodeFrame(payload) });
      }
    }
    const missing: Uint8Array[] = [];
    let lastSequence = parsed.lastSequence;
    for (let batch = batches.get(lastSequence + 1); batch; batch = batches.get(lastSequence + 1)) {
      missing.push(batch.frame);
      lastSequence = batch.last;
    }
    if (missing.length === 0) return;
    if (parsed.torn) await handle.truncate(parsed.validLength);
    await writeAll(handle, Buffer.concat(missing), parsed.validLength);
    await handle.datasync();
  } finally {
    await handle.close().catch(() => undefined);
  }
}

function parseOwner(value: unknown): LogOwner | null {
  if (typeof value !== 'object' || value === null) return null;
  const owner = value as Partial<LogOwner>;
  return typeof owner.pid === 'number' &&
    typeof owner.host === 'string' &&
    typeof owner.token === 'string' &&
    typeof owner.createdAt === 'number'
    ? (owner as LogOwner)
    : null;
}

async function readOptional(context: AdapterContext, path: string): Promise<Uint8Array | null> {
  try {
    return await context.fileSystem.readFile(path);
  } catch (error) {
    if (isNotFound(error)) return null;
    throw toBackendError(error, `read ${path}`);
  }
}

async function isOldFile(context: AdapterContext, path: string): Promise<boolean> {
  try {
    return Date.now() - (await context.fileSystem.stat(path)).mtimeMs > HEADERLESS_GRACE_MS;
  } catch (error) {
    if (isNotFound(error)) return false;
    throw toBackendError(error, `stat ${path}`);
  }
}

function compareOrder(
  left: readonly [number, string, number],
  right: readonly [number, string, number],
): number {
  if (left[0] !== right[0]) return left[0] - right[0];
  if (left[1] !== right[1]) return left[1] < right[1] ? -1 : 1;
  return left[2] - right[2];
}
