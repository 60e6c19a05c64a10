import type { Target } from '../../harness/compare.js';
import { BENCHMARK_SET, redisDurableSection } from './redis-durable.js';

/**
 * The Redis adapter's target (issue 18): durable saves of 1 KiB from 50 concurrent sessions
 * at ≥ 0.7× `redis-benchmark -t set -d 1024 -c 50` on the same server in the same run. The
 * pipelined journal is reported against `redis-benchmark -P 16` without a target.
 * Listed in `src/targets.ts` beside the fs targets.
 */
export const redisTargets: readonly Target[] = [
  {
    id: 'redis-save-vs-benchmark',
    description: 'Redis: durable 1 KiB saves, 50 sessions ≥ 0.7× redis-benchmark SET -c 50',
    section: redisDurableSection.id,
    table: 'saves',
    cases: ['50'],
    reference: { contender: BENCHMARK_SET },
    comparator: '>=',
    threshold: 0.7,
  },
];
