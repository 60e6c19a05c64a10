import type { Clock, TimerHandle } from '../time/clock.js';

export interface CheckpointOptions {
  clock: Clock;
  intervalMs: number;
  idleRefreshMs: number;
  /** Saves the session under its lock; resolves when durable as configured. */
  save(): Promise<void>;
  /** Schedules timers outside any held lock's async context. */
  detached<T>(fn: () => T): T;
  onError(error: unknown): void;
}

/**
 * E4: the periodic checkpoint of a live run. Driven by an activity counter (tool
 * completions, explicit `recordActivity`), checked every `intervalMs`; saves only when
 * the counter advanced or an idle refresh is due. Never fires once stopped; `stop()`
 * awaits a checkpoint in flight.
 */
export class PeriodicCheckpoint {
  private activity = 0;
  private savedActivity = 0;
  private lastSaveAt: number;
  private timer: TimerHandle | null = null;
  private inFlight: Promise<void> | null = null;
  private stopped = false;
  private saves = 0;

  constructor(private readonly options: CheckpointOptions) {
    this.lastSaveAt = options.clock.now();
  }

  /** Number of checkpoint saves written so far. */
  get saveCount(): number {
    return this.saves;
  }

  start(): void {
    if (this.stopped || this.timer !== null) return;
    this.schedule();
  }

  recordActivity(): void {
    this.activity++;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) {
      this.options.clock.clearTimer(this.timer);
      this.timer = null;
    }
    await this.inFlight;
  }

  private schedule(): void {
    this.timer = this.options.detached(() =>
      this.options.clock.setTimer(() => this.tick(), this.options.intervalMs),
    );
  }

  /** Returns the save it started, so a manual clock can let it finish (see Clock). */
  private tick(): Promise<void> | undefined {
    this.timer = null;
    if (this.stopped) return undefined;
    const now = this.options.clock.now();
    const advanced = this.activity > this.savedActivity;
    const idleDue = now - this.lastSaveAt >= this.options.idleRefreshMs;
    if (!advanced && !idleDue) {
      this.schedule();
      return undefined;
    }
    const activityAtStart = this.activity;
    const saving = this.options
      .save()
      .then(() => {
        this.savedActivity = activityAtStart;
        this.lastSaveAt = this.options.clock.now();
        this.saves++;
      })
      .catch((error: unknown) => this.options.onError(error))
      .finally(() => {
        this.inFlight = null;
        if (!this.stopped) this.schedule();
      });
    this.inFlight = saving;
    return saving;
  }
}
