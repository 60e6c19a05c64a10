import { describe, expect, it } from 'vitest';
import { describeCpu, withProcessCpu } from './process-cpu.js';

describe('process CPU samples', () => {
  it('counts the CPU a busy loop burns, and not the time spent waiting', async () => {
    const busy = await withProcessCpu(1_000, async () => {
      const until = performance.now() + 50;
      while (performance.now() < until) {
        // spin: this process's CPU, not a wait
      }
    });
    const idle = await withProcessCpu(1, () => new Promise((resolve) => setTimeout(resolve, 50)));
    expect(busy.operations).toBe(1_000);
    expect(busy.elapsedMs).toBeGreaterThanOrEqual(50);
    expect(idle.elapsedMs).toBeGreaterThanOrEqual(45);
    expect(busy.cpuMicros).toBeGreaterThan(idle.cpuMicros);
    expect(idle.cpuMicros).toBeLessThan(idle.elapsedMs * 1_000);
  });

  it('takes medians per operation and of the busy share', () => {
    const described = describeCpu([
      { operations: 10, elapsedMs: 1, cpuMicros: 500 },
      { operations: 10, elapsedMs: 1, cpuMicros: 900 },
      { operations: 20, elapsedMs: 2, cpuMicros: 2_000 },
    ]);
    expect(described.microsPerOperation).toBe(90);
    expect(described.busyShare).toBe(0.9);
  });
});
