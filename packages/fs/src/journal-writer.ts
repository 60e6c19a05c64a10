import { randomBytes } from 'node:crypto';
import type { AppendLogResult, LogDurability } from '@keepsake/core';
import { type AdapterContext, makeDirectory } from './context.js';
import { isNotFound, toBackendError } from './errors.js';
import type { Lease } from './file-lock.js';
import { type FileHandle, readAt, writeAll } from './file-system.js';
import { encodeFrame } from './framing.js';
import type { GroupCommitLog } from './group-commit-log.js';
import { parseJournal } from './journal-format.js';
import type { JournalPaths } from './layout.js';
import { encodeJournalHeader, NONCE_BYTES } from './records.js';

export interface PendingAppend {
  readonly firstSequence: number;
  readonly lastSequence: number;
  readonly frame: Uint8Array;
  readonly durability: LogDurability;
}

interface QueuedAppend extends PendingAppend {
  resolve(result: AppendLogResult): void;
  reject(error: unknown): void;
}

/** What this process knows of the journal file, valid while its inode and size match. */
interface KnownTail {
  inode: number;
  size: number;
  lastSequence: number;
  /** The journal's nonce (its header); null for a file without one. */
  nonce: string | null;
  /** The file's name and header are durable (file and directory fsynced since creation). */
  linked: boolean;
  /** Bytes from the start that are durable, or covered by the group-commit log. */
  covered: number;
}

/** How long an idle writer keeps its journal's lock. */
const IDLE_MS = 20;
/** How often a busy writer looks for a wait mark: the longest another writer waits. */
const WAIT_CHECK_MS = 250;
/** A writer lets go at least this often, so its lock never looks stale to another host. */
const MAX_HOLD_MS = 5_000;

interface HeldJournal {
  readonly lease: Lease;
  /** Open on the journal; null until the first append creates the file. */
  handle: FileHandle | null;
  tail: KnownTail;
  readonly since: number;
  checkedAt: number;
}

export interface JournalIdentity {
  readonly sessionId: string;
  readonly runId: string;
  readonly paths: JournalPaths;
}

/**
 * E2 for one journal. Appends queue; one batch at a time is written with a single write,
 * holding the journal's lock file. The writer keeps the lock (a lease) and the file open
 * while appends keep coming, so a streamed event costs one write, not a lock file and an
 * open of its own; it lets go after IDLE_MS without appends, at once when another writer
 * leaves a wait mark, and at least every MAX_HOLD_MS. When an append asks for durability:
 * - `group`: the frames also go to the group-commit log, whose one fdatasync is shared with
 *   the appends of every other journal meanwhile (group-commit-log.ts). This needs the
 *   journal's header durable and everything before the batch durable or in the log; when
 *   not (a new journal, earlier `none` appends, appends of another process), the journal
 *   itself is fdatasynced instead, which covers all of it;
 * - `each`: never batched, one fdatasync of the journal per append.
 * Appends arriving while a batch is written form the next batch, at most `journalBatchBytes`
 * (one append alone may exceed it), so a large event does not drag small ones into one long
 * write.
 *
 * The sequence check (`records[0].sequence` must be last + 1) runs under the lock against
 * the tail this process knows, re-read from the file whenever the file's inode or size says
 * another process appended, truncated or re-created it. A failed write or flush is cut off
 * again, so it never shows up later as if it had landed.
 */
export class JournalWriter {
  private readonly context: AdapterContext;
  private readonly identity: JournalIdentity;
  private readonly log: GroupCommitLog;
  private queue: QueuedAppend[] = [];
  private running: Promise<void> | null = null;
  private tail: KnownTail | null = null;
  private held: HeldJournal | null = null;
  private idleTimer: ReturnType<typeof setTimeout> | null = null;

  constructor(context: AdapterContext, identity: JournalIdentity, log: GroupCommitLog) {
    this.context = context;
    this.identity = identity;
    this.log = log;
  }

  get isIdle(): boolean {
    return this.running === null && this.queue.length === 0 && this.held === null;
  }

  append(append: PendingAppend): Promise<AppendLogResult> {
    return new Promise<AppendLogResult>((resolve, reject) => {
      this.queue.push({ ...append, resolve, reject });
      this.kick();
    });
  }

  /** Waits for queued appends, then lets go of the journal (close, delete). */
  async release(): Promise<void> {
    for (;;) {
      while (this.running) await this.running;
      if (this.queue.length > 0) {
        this.kick();
        continue;
      }
      this.running = this.letGo().finally(() => {
        this.running = null;
        this.kick();
      });
      await this.running;
      if (this.queue.length === 0 && this.held === null) return;
    }
  }

  /** The journal was deleted: what this process knew of it no longer holds. */
  forget(): void {
    this.tail = null;
  }

  private kick(): void {
    if (this.running !== null || this.queue.length === 0) return;
    this.running = this.pump().finally(() => {
      this.running = null;
      this.kick();
    });
  }

  private async pump(): Promise<void> {
    this.clearIdleTimer();
    while (this.queue.length > 0) {
      const batch = this.takeBatch();
      try {
        const results = await this.writeBatch(batch);
        for (const [index, append] of batch.entries()) {
          append.resolve(results[index] as AppendLogResult);
        }
      } catch (error) {
        // Whatever reached the file is re-read (and a torn tail cut) under the next lock.
        this.tail = null;
        await this.letGo().catch(() => undefined);
        const failure = toBackendError(error, `append to journal ${this.identity.paths.file}`);
        for (const append of batch) append.reject(failure);
      }
    }
    await this.keepOrLetGo();
  }

  /**
   * After a batch: let go of the journal when another writer waits for it (checked at most
   * every WAIT_CHECK_MS) or it was held for MAX_HOLD_MS; else keep it until IDLE_MS pass
   * without an append.
   */
  private async keepOrLetGo(): Promise<void> {
    const held = this.held;
    if (held === null) return;
    const now = Date.now();
    let letGo = now - held.since > MAX_HOLD_MS;
    if (!letGo && now - held.checkedAt > WAIT_CHECK_MS) {
      held.checkedAt = now;
      letGo = await held.lease.wanted();
    }
    if (letGo) {
      await this.letGo();
      return;
    }
    this.idleTimer = setTimeout(() => {
      this.idleTimer = null;
      if (this.running !== null || this.queue.length > 0) return;
      this.running = this.letGo()
        .catch(() => undefined)
        .finally(() => {
          this.running = null;
          this.kick();
        });
    }, IDLE_MS);
    this.idleTimer.unref?.();
  }

  private clearIdleTimer(): void {
    if (this.idleTimer !== null) clearTimeout(this.idleTimer);
    this.idleTimer = null;
  }

  private async letGo(): Promise<void> {
    this.clearIdleTimer();
    const held = this.held;
    this.held = null;
    if (held === null) return;
    await held.handle?.close().catch(() => undefined);
    await held.lease.release();
  }

  /** Takes the journal's lock (as a lease) and opens it, unless already held. */
  private async hold(): Promise<HeldJournal> {
    if (this.held !== null) return this.held;
    const { locks, fileSystem } = this.context;
    const paths = this.identity.paths;
    const lease = await locks.lease(paths.lock, () => makeDirectory(fileSystem, paths.directory));
    try {
      const opened = await this.openTail();
      const now = Date.now();
      this.held = { lease, handle: opened.handle, tail: opened.tail, since: now, checkedAt: now };
      return this.held;
    } catch (error) {
      await lease.release().catch(() => undefined);
      throw error;
    }
  }

  private takeBatch(): QueuedAppend[] {
    const limit = this.context.options.journalBatchBytes;
    const first = this.queue.shift() as QueuedAppend;
    const batch = [first];
    if (first.durability === 'each') return batch;
    let bytes = first.frame.length;
    while (this.queue.length > 0) {
      const next = this.queue[0] as QueuedAppend;
      if (next.durability === 'each' || bytes + next.frame.length > limit) break;
      bytes += next.frame.length;
      batch.push(this.queue.shift() as QueuedAppend);
    }
    return batch;
  }

  private async writeBatch(batch: QueuedAppend[]): Promise<AppendLogResult[]> {
    const { fileSystem } = this.context;
    const paths = this.identity.paths;
    const held = await this.hold();
    const tail = { ...held.tail };
    const start = tail.size;
    const results: AppendLogResult[] = [];
    const frames: Uint8Array[] = [];
    let durability: LogDurability = 'none';
    for (const append of batch) {
      if (append.firstSequence !== tail.lastSequence + 1) {
        results.push({ ok: false, lastSequence: tail.lastSequence });
        continue;
      }
      frames.push(append.frame);
      tail.lastSequence = append.lastSequence;
      if (append.durability !== 'none' && durability !== 'each') durability = append.durability;
      results.push({ ok: true });
    }
    if (frames.length === 0) return results;
    const header: Uint8Array[] = [];
    if (held.handle === null || tail.size === 0) {
      // A new journal (or one whose creation a crash interrupted): it starts with its nonce.
      held.handle ??= await fileSystem.open(paths.file, 'wx');
      tail.inode = (await held.handle.stat()).ino;
      tail.nonce = randomBytes(NONCE_BYTES).toString('hex');
      header.push(encodeFrame(encodeJournalHeader(tail.nonce)));
    }
    const handle = held.handle;
    const bytes = Buffer.concat([...header, ...frames]);
    try {
      await writeAll(handle, bytes, start);
      tail.size = start + bytes.length;
      if (durability !== 'none') await this.makeDurable(handle, tail, start, frames, durability);
    } catch (error) {
      // A failed append must not show up later as if it had landed: cut it off again.
      await handle.truncate(start).catch(() => undefined);
      throw error;
    }
    if (durability === 'none') this.context.durability.markDirty(paths.directory, paths.file);
    held.tail = tail;
    this.tail = tail;
    return results;
  }

  private async makeDurable(
    handle: FileHandle,
    tail: KnownTail,
    start: number,
    frames: Uint8Array[],
    durability: LogDurability,
  ): Promise<void> {
    const viaLog =
      durability === 'group' &&
      this.log.usable &&
      tail.linked &&
      tail.nonce !== null &&
      tail.covered === start;
    if (viaLog) {
      const { sessionId, runId, paths } = this.identity;
      await this.log.commit(
        { nonce: tail.nonce as string, sessionId, runId, frames: Buffer.concat(frames) },
        paths.file,
      );
    } else {
      await handle.datasync();
      if (!tail.linked) {
        await this.context.durability.syncDirectory(this.identity.paths.directory);
        await this.context.durability.ensureLinked(this.identity.paths.directory, false);
        tail.linked = true;
      }
    }
    tail.covered = tail.size;
  }

  /**
   * Under the lock: the file's tail, from memory when the file is as this process left it,
   * else from the file, cutting a torn tail (E3). `handle` is null when the file is missing.
   */
  private async openTail(): Promise<{ handle: FileHandle | null; tail: KnownTail }> {
    const { fileSystem } = this.context;
    const path = this.identity.paths.file;
    let stats: Awaited<ReturnType<typeof fileSystem.stat>>;
    try {
      stats = await fileSystem.stat(path);
    } catch (error) {
      if (!isNotFound(error)) throw error;
      const tail = { inode: -1, size: 0, lastSequence: 0, nonce: null, linked: false, covered: 0 };
      return { handle: null, tail };
    }
    const handle = await fileSystem.open(path, 'r+');
    const known = this.tail;
    if (known && known.inode === stats.ino && known.size === stats.size) {
      return { handle, tail: { ...known } };
    }
    try {
      const parsed = parseJournal(await readAt(handle, stats.size, 0));
      if (parsed.torn) await handle.truncate(parsed.validLength);
      // Written by another process or an earlier one: nothing is known to be durable.
      const tail: KnownTail = {
        inode: stats.ino,
        size: parsed.validLength,
        lastSequence: parsed.lastSequence,
        nonce: parsed.nonce,
        linked: false,
        covered: 0,
      };
      return { handle, tail };
    } catch (error) {
      await handle.close().catch(() => undefined);
      throw error;
    }
  }
}
