/**
 * An injectable clock so time-based clauses (checkpoint interval, recovery grace,
 * retry give-up, drain deadline) can be tested without sleeping.
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  setTimer(callback: () => void, delayMs: number): TimerHandle;
  clearTimer(handle: TimerHandle): void;
}

export interface TimerHandle {
  readonly id: number;
}

let nextTimerId = 1;

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimer(callback, delayMs) {
    const timer = setTimeout(callback, delayMs);
    // Timers of the store must never keep a process alive on their own.
    timer.unref?.();
    const handle = { id: nextTimerId++, timer };
    return handle;
  },
  clearTimer(handle) {
    clearTimeout((handle as unknown as { timer: ReturnType<typeof setTimeout> }).timer);
  },
};

interface ManualTimer {
  handle: TimerHandle;
  dueAt: number;
  callback: () => void;
}

/** A clock that moves only when told to; `advance` fires due timers in order. */
export class ManualClock implements Clock {
  private current: number;
  private timers: ManualTimer[] = [];

  constructor(startMs = Date.UTC(2026, 0, 1)) {
    this.current = startMs;
  }

  now(): number {
    return this.current;
  }

  setTimer(callback: () => void, delayMs: number): TimerHandle {
    const handle = { id: nextTimerId++ };
    this.timers.push({ handle, dueAt: this.current + Math.max(0, delayMs), callback });
    return handle;
  }

  clearTimer(handle: TimerHandle): void {
    this.timers = this.timers.filter((timer) => timer.handle.id !== handle.id);
  }

  /** Number of timers waiting to fire. */
  get pendingTimers(): number {
    return this.timers.length;
  }

  /**
   * Moves time forward by `ms`, firing every timer that falls due, in order, and
   * letting the promise work each one starts settle before the next fires.
   */
  async advance(ms: number): Promise<void> {
    const target = this.current + ms;
    for (;;) {
      this.timers.sort((a, b) => a.dueAt - b.dueAt || a.handle.id - b.handle.id);
      const next = this.timers[0];
      if (next === undefined || next.dueAt > target) break;
      this.timers.shift();
      this.current = Math.max(this.current, next.dueAt);
      next.callback();
      await settle();
    }
    this.current = target;
    await settle();
  }

  /** Sets the time without firing timers (for data whose age matters, not timers). */
  set(ms: number): void {
    this.current = ms;
  }
}

/** Lets queued promise callbacks and I/O callbacks run. */
export async function settle(rounds = 5): Promise<void> {
  for (let round = 0; round < rounds; round++) {
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}
