/**
 * Folder time/: the injectable clock behind every time-based clause (E4's checkpoint interval,
 * F1/F2's grace and give-up, C2/C5's drain deadline), and deadline.ts, a promise raced against it.
 */

/**
 * An injectable clock so time-based clauses (checkpoint interval, recovery grace,
 * retry give-up, drain deadline) can be tested without sleeping.
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /**
   * Calls `callback` once after `delayMs`. A callback may return the promise of the work it
   * started (a checkpoint save): the system clock ignores it; `ManualClock.advance` waits
   * for it before firing the next timer, so a large jump stays deterministic.
   */
  setTimer(callback: () => unknown, delayMs: number): TimerHandle;
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
  callback: () => unknown;
}

export interface ManualClockOptions {
  /**
   * How long (real time) `advance` waits for the work a fired timer started before it
   * fires the next one. Only a guard: work that waits for something a later timer releases
   * (a save queued behind a cancel that waits for its deadline) must not deadlock the
   * advance. Default 2,000 ms.
   */
  workTimeoutMs?: number;
}

/**
 * A clock that moves only when told to. `advance` fires due timers in order; each timer's
 * work (the promise its callback returns, with whatever I/O it does) settles before the
 * next fires, and advances queue behind each other, so time never moves backwards.
 */
export class ManualClock implements Clock {
  private current: number;
  private timers: ManualTimer[] = [];
  private advancing: Promise<void> = Promise.resolve();
  private readonly workTimeoutMs: number;

  constructor(startMs = Date.UTC(2026, 0, 1), options: ManualClockOptions = {}) {
    this.current = startMs;
    this.workTimeoutMs = options.workTimeoutMs ?? 2_000;
  }

  now(): number {
    return this.current;
  }

  setTimer(callback: () => unknown, delayMs: number): TimerHandle {
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
   * Moves time forward by `ms`, firing every timer that falls due, in order. After each,
   * the work its callback returned settles (real I/O included, up to `workTimeoutMs`), so
   * a timer it schedules in turn fires within the same advance when it falls due. Calls
   * that overlap run one after the other: each moves time on from where the last ended.
   */
  advance(ms: number): Promise<void> {
    const step = this.advancing.then(() => this.advanceNow(ms));
    this.advancing = step.catch(() => undefined);
    return step;
  }

  private async advanceNow(ms: number): Promise<void> {
    const target = this.current + ms;
    for (;;) {
      this.timers.sort((a, b) => a.dueAt - b.dueAt || a.handle.id - b.handle.id);
      const next = this.timers[0];
      if (next === undefined || next.dueAt > target) break;
      this.timers.shift();
      this.current = Math.max(this.current, next.dueAt);
      await this.settleWork(next.callback());
      await settle();
    }
    this.current = target;
    await settle();
  }

  private async settleWork(work: unknown): Promise<void> {
    if (!isPromiseLike(work)) return;
    let guard: ReturnType<typeof setTimeout> | undefined;
    const timedOut = new Promise<void>((resolve) => {
      guard = setTimeout(resolve, this.workTimeoutMs);
    });
    // Its failure is the work's own business (it reports it); the clock moves on.
    await Promise.race([Promise.resolve(work).then(noop, noop), timedOut]);
    clearTimeout(guard);
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

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}

function noop(): void {}
