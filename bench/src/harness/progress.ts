import type { TrialEvent } from './measure.js';

/**
 * The progress display. On a terminal, one status line (bar, section, case, contender,
 * round, elapsed time) redrawn in place on stderr, with a line kept for each finished case;
 * elsewhere (CI logs) only the kept lines, so a log stays readable.
 */
export class Progress {
  private readonly stream: NodeJS.WriteStream;
  private readonly interactive: boolean;
  private readonly started = performance.now();
  private plannedTrials = 0;
  private doneTrials = 0;
  private section = '';
  private caseLabel = '';
  private statusShown = false;

  constructor(stream: NodeJS.WriteStream = process.stderr) {
    this.stream = stream;
    this.interactive = stream.isTTY === true && process.env.CI === undefined;
  }

  /** Adds the trials a section will run to the total the bar counts towards. */
  plan(trials: number): void {
    this.plannedTrials += trials;
  }

  beginSection(title: string): void {
    this.section = title;
    this.caseLabel = '';
    this.keep(`▶ ${title}`);
  }

  beginCase(label: string): void {
    this.caseLabel = label;
    this.draw('setting up');
  }

  /** Called before each trial. */
  trial(event: TrialEvent): void {
    if (this.doneTrials < this.plannedTrials) this.doneTrials++;
    const phase = event.warmup ? 'warm-up' : 'round';
    this.draw(`${event.contender} · ${phase} ${event.round}/${event.rounds}`);
  }

  /** A status message while a section prepares data (not a trial). */
  status(message: string): void {
    this.draw(message);
  }

  /** A line that stays: a finished case, a skipped section, a warning. */
  keep(line: string): void {
    this.clear();
    this.stream.write(`${line}\n`);
  }

  finish(): void {
    this.clear();
    this.stream.write(`done in ${formatElapsed(performance.now() - this.started)}\n`);
  }

  private draw(detail: string): void {
    if (!this.interactive) return;
    const fraction = this.plannedTrials === 0 ? 0 : this.doneTrials / this.plannedTrials;
    const width = 20;
    const filled = Math.round(fraction * width);
    const bar = `${'█'.repeat(filled)}${'░'.repeat(width - filled)}`;
    const percent = `${Math.floor(fraction * 100)}%`.padStart(4);
    const where = [this.section, this.caseLabel, detail].filter((part) => part !== '').join(' › ');
    const line = `${bar} ${percent} ${formatElapsed(performance.now() - this.started)}  ${where}`;
    const columns = this.stream.columns ?? 120;
    this.stream.write(`\r\x1b[2K${line.slice(0, Math.max(columns - 1, 20))}`);
    this.statusShown = true;
  }

  private clear(): void {
    if (this.interactive && this.statusShown) this.stream.write('\r\x1b[2K');
    this.statusShown = false;
  }
}

export function formatElapsed(milliseconds: number): string {
  const seconds = Math.round(milliseconds / 1000);
  const minutes = Math.floor(seconds / 60);
  return minutes > 0 ? `${minutes}m${String(seconds % 60).padStart(2, '0')}s` : `${seconds}s`;
}
