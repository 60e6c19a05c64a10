import type { Clock } from './clock.js';

/**
 * Whether `promise` settles (either way) within `ms` on `clock`. The promise goes on
 * either way; the caller decides what to do about one that did not settle in time. The
 * timer is cleared as soon as the promise settles, so nothing keeps the process alive.
 */
export function settlesWithin(
  promise: Promise<unknown>,
  clock: Clock,
  ms: number,
): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const timer = clock.setTimer(() => resolve(false), ms);
    promise.then(
      () => {
        clock.clearTimer(timer);
        resolve(true);
      },
      () => {
        clock.clearTimer(timer);
        resolve(true);
      },
    );
  });
}
