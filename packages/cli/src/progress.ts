import cliProgress from 'cli-progress';
import type { OutputStream } from './cli-io.js';

/**
 * Progress of long work (migrate, export, import, verify). On a terminal it is a bar
 * (cli-progress) redrawn in place on stderr; anywhere else (a pipe, a file, CI logs) it is a
 * plain line at every tenth of the way, because a redrawn bar written to a file is a mess of
 * carriage returns. `--quiet` turns both off.
 */
export interface Progress {
  /** Starts (or restarts) a phase of `total` steps. */
  start(phase: string, total: number): void;
  /** Sets how many steps are done, with a short note (records copied, say). */
  update(done: number, note?: string): void;
  /** Ends the phase; the last state is shown once more. */
  stop(): Promise<void>;
}

export type ProgressMode = 'bar' | 'lines' | 'none';

export function progressMode(stderr: OutputStream, quiet: boolean): ProgressMode {
  if (quiet) return 'none';
  return stderr.isTTY && stderr.stream !== null ? 'bar' : 'lines';
}

export function createProgress(stderr: OutputStream, mode: ProgressMode): Progress {
  if (mode === 'bar' && stderr.stream !== null) return new BarProgress(stderr.stream);
  if (mode === 'lines') return new LineProgress(stderr);
  return silentProgress;
}

const silentProgress: Progress = {
  start: () => undefined,
  update: () => undefined,
  stop: async () => undefined,
};

class BarProgress implements Progress {
  private bar: cliProgress.SingleBar | null = null;
  private readonly stream: NodeJS.WritableStream;

  constructor(stream: NodeJS.WritableStream) {
    this.stream = stream;
  }

  start(phase: string, total: number): void {
    this.bar?.stop();
    this.bar = new cliProgress.SingleBar(
      {
        stream: this.stream,
        format: `${phase} [{bar}] {value}/{total} {note}`,
        hideCursor: true,
        clearOnComplete: false,
        // Redraws cost little, but a fast copy would otherwise redraw far more than it copies.
        fps: 10,
      },
      cliProgress.Presets.shades_classic,
    );
    this.bar.start(Math.max(total, 1), 0, { note: '' });
  }

  update(done: number, note = ''): void {
    this.bar?.update(done, { note });
  }

  async stop(): Promise<void> {
    this.bar?.stop();
    this.bar = null;
  }
}

/** A line when the work passes each tenth, and once at the end: readable in a log. */
class LineProgress implements Progress {
  private phase = '';
  private total = 0;
  private done = 0;
  private note = '';
  private lastTenth = -1;
  private pending: Promise<void> = Promise.resolve();
  private readonly stderr: OutputStream;

  constructor(stderr: OutputStream) {
    this.stderr = stderr;
  }

  start(phase: string, total: number): void {
    this.phase = phase;
    this.total = total;
    this.done = 0;
    this.note = '';
    this.lastTenth = 0;
    this.print();
  }

  update(done: number, note = ''): void {
    this.done = done;
    this.note = note;
    const tenth = this.total === 0 ? 10 : Math.floor((done * 10) / this.total);
    if (tenth > this.lastTenth && tenth < 10) {
      this.lastTenth = tenth;
      this.print();
    }
  }

  async stop(): Promise<void> {
    this.print();
    await this.pending;
  }

  private print(): void {
    const line = `${this.phase}: ${this.done}/${this.total}${this.note === '' ? '' : ` ${this.note}`}\n`;
    // Kept in order, and never awaited by the work itself: progress must not slow the copy.
    this.pending = this.pending.then(() => this.stderr.write(line)).catch(() => undefined);
  }
}
