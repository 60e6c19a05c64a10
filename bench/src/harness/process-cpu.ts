import { median } from './stats.js';

/** One measured stretch of work: the wall time it took and this process's CPU meanwhile. */
export interface CpuSample {
  readonly operations: number;
  readonly elapsedMs: number;
  /** User + system CPU of the whole process (every thread: GC helpers and libuv's too). */
  readonly cpuMicros: number;
}

/** Runs `action` and reports its wall time and the process's CPU time meanwhile. */
export async function withProcessCpu(
  operations: number,
  action: () => Promise<unknown>,
): Promise<CpuSample> {
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  await action();
  const elapsedMs = performance.now() - started;
  const cpu = process.cpuUsage(cpuBefore);
  return { operations, elapsedMs, cpuMicros: cpu.user + cpu.system };
}

/**
 * What the samples say about who limits a loop: the median CPU per operation, and the
 * median share of the wall time this process's CPU filled (about 1 or more: the process is
 * never idle, so its operations per second are about 1 / its CPU per operation).
 */
export function describeCpu(samples: readonly CpuSample[]): {
  microsPerOperation: number;
  busyShare: number;
} {
  return {
    microsPerOperation: median(samples.map((sample) => sample.cpuMicros / sample.operations)),
    busyShare: median(samples.map((sample) => sample.cpuMicros / (sample.elapsedMs * 1_000))),
  };
}
