/**
 * Every test worker in this repository loads this file (each vitest.config.ts lists it in
 * `setupFiles`, beside `execArgv: ['--unhandled-rejections=strict']`): an unhandled
 * rejection anywhere in a test file fails the run, including one raised after the file's
 * last test finished.
 *
 * Vitest already fails the run for an unhandled rejection raised while a worker runs a
 * file. One raised after the file's last test (a promise chain a test did not await, a
 * timer it left behind) is lost: vitest ends the worker first and the run passes. So once
 * the file's own hooks are done, this waits for what the file left pending (I/O requests,
 * immediates, and timers due within SETTLE_LIMIT_MS) and fails the file if any rejection
 * went unhandled. It waits for work to end, never for a fixed time.
 */
import { afterAll } from 'vitest';

/** Timers set for longer than this (a server's keep-alive, a watchdog) are not waited for. */
const SETTLE_LIMIT_MS = 1000;
/** Bounds the wait should something keep re-arming itself. */
const MAX_SETTLE_TURNS = 10_000;
/** Resource kinds that are work in flight, not a server or a pipe left open. */
const WORK_IN_FLIGHT = new Set([
  'FSReqCallback',
  'FSReqPromise',
  'FileHandleCloseReq',
  'GetAddrInfoReqWrap',
  'TCPConnectWrap',
  'ShutdownWrap',
  'WriteWrap',
  'Immediate',
]);

const unhandled: unknown[] = [];
process.on('unhandledRejection', (reason) => {
  unhandled.push(reason);
});

// Short timers the file sets are tracked so the final wait can let them fire.
const shortTimers = new Set<NodeJS.Timeout>();
const realSetTimeout = globalThis.setTimeout;
const realClearTimeout = globalThis.clearTimeout;
globalThis.setTimeout = ((
  callback: (...values: unknown[]) => void,
  delay?: number,
  ...rest: unknown[]
) => {
  const timer: NodeJS.Timeout = realSetTimeout(
    (...values: unknown[]) => {
      shortTimers.delete(timer);
      callback(...values);
    },
    delay,
    ...rest,
  );
  if ((delay ?? 0) <= SETTLE_LIMIT_MS) shortTimers.add(timer);
  return timer;
}) as typeof setTimeout;
globalThis.clearTimeout = ((timer?: NodeJS.Timeout | string | number) => {
  if (typeof timer === 'object') shortTimers.delete(timer);
  realClearTimeout(timer);
}) as typeof clearTimeout;

afterAll(async () => {
  await settlePendingWork();
  if (unhandled.length === 0) return;
  const reasons = unhandled.splice(0);
  throw new AggregateError(
    reasons,
    `${reasons.length} unhandled rejection(s) in this test file: ${reasons
      .map((reason) => (reason instanceof Error ? reason.message : String(reason)))
      .join('; ')}`,
  );
});

/**
 * Waits until the work in flight is done and every short timer that was pending when the
 * file ended has fired or been cleared. Timers set meanwhile are not waited for, so a
 * poll that re-arms itself cannot hold the file open.
 */
async function settlePendingWork(): Promise<void> {
  const timers = new Set([...shortTimers].filter((timer) => timer.hasRef()));
  for (let turn = 0; turn < MAX_SETTLE_TURNS; turn++) {
    for (const timer of timers) if (!shortTimers.has(timer)) timers.delete(timer);
    const inFlight = process
      .getActiveResourcesInfo()
      .some((resource) => WORK_IN_FLIGHT.has(resource));
    if (timers.size === 0 && !inFlight) return;
    // A timer is waited for by a timer of our own (no busy loop); work in flight by a turn.
    await new Promise<void>((resolve) =>
      timers.size > 0 ? realSetTimeout(resolve, 1) : setImmediate(resolve),
    );
  }
}
