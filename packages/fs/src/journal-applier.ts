import type { FileHandle } from './file-system.js';
import { writeAll } from './file-system.js';
import type { UnappliedFrames } from './unapplied-frames.js';

/**
 * How long frames made durable through the group-commit log may wait before they are
 * written to the journal file (one write for all of them): the most that readers in other
 * processes lag behind. Readers in this process never lag (unapplied-frames.ts).
 */
const APPLY_MS = 50;

/** The held journal the applier writes to; null when the journal is not held. */
export interface ApplyTarget {
  readonly handle: FileHandle;
  readonly unapplied: UnappliedFrames;
  /** The file's size once every unapplied frame is written (the known tail). */
  readonly size: number;
}

/**
 * Writes a journal's unapplied frames to its file in bulk, beside the appends rather than
 * in their way: appends that go through the group-commit log never wait for it, so a slow
 * file write (behind the filesystem's journal commit) holds back no stream.
 */
export class JournalApplier {
  private readonly target: () => ApplyTarget | null;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private applying: Promise<void> | null = null;

  constructor(target: () => ApplyTarget | null) {
    this.target = target;
  }

  /** Frames were added: write them within APPLY_MS. */
  schedule(): void {
    if (this.timer !== null) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      // A failure keeps the frames; letting go of the journal tries again and reports it.
      this.start().catch(() => undefined);
    }, APPLY_MS);
    this.timer.unref?.();
  }

  cancel(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }

  /** Writes every frame waiting now; rejects (keeping the frames) when the write fails. */
  async all(): Promise<void> {
    for (;;) {
      if (this.applying !== null) {
        await this.applying;
        continue;
      }
      const target = this.target();
      if (target === null || target.unapplied.isEmpty) return;
      await this.start();
    }
  }

  /** Starts writing what waits now, unless a write is in flight (then that one). */
  private start(): Promise<void> {
    if (this.applying !== null) return this.applying;
    const target = this.target();
    if (target === null || target.unapplied.isEmpty) return Promise.resolve();
    const { unapplied, handle } = target;
    const position = target.size - unapplied.bytes;
    const { bytes, count } = unapplied.snapshot();
    // Off the event loop: this write may wait behind the filesystem's journal commit.
    const applying = writeAll(handle, bytes, position)
      .then(() => unapplied.drop(count))
      .finally(() => {
        this.applying = null;
      });
    this.applying = applying;
    return applying;
  }
}
