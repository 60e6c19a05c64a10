import type { Target } from '../../harness/compare.js';
import { FLOOR_JOURNAL, FLOOR_SAVE_EVALSHA, redisDurableSection } from './redis-durable.js';

/**
 * The Redis adapter's targets (issue 39), each against a floor that does the same work: a
 * hand-written ioredis loop with no Keepsake code, on as many connections, against the same
 * redis-server (`appendfsync always`) in the same rounds. Durable saves of 1 KiB from 50
 * sessions ≥ 0.85× the loop writing each save's document and index entry atomically in one
 * EVALSHA (B7 stays: the entry is written durably with every save; MULTI/EXEC is measured
 * beside it and was the slower of the two); pipelined journal appends ≥ 0.85× the loop
 * sending one XADD per framed record, pipelined. `redis-benchmark -t set -d 1024 -c 50`
 * stays in the table as the server's ceiling, without a target (it writes no index entry).
 * Listed in `src/targets.ts` beside the fs targets.
 */
export const redisTargets: readonly Target[] = [
  {
    id: 'redis-save-vs-floor',
    description:
      'Redis: durable 1 KiB saves, 50 sessions ≥ 0.85× the ioredis floor (document + index entry in one EVALSHA)',
    section: redisDurableSection.id,
    table: 'saves',
    cases: ['50'],
    reference: { contender: FLOOR_SAVE_EVALSHA },
    comparator: '>=',
    threshold: 0.85,
  },
  {
    id: 'redis-journal-vs-floor',
    description:
      'Redis: pipelined journal appends, 16 streams ≥ 0.85× the ioredis floor (one XADD per framed record, pipelined)',
    section: redisDurableSection.id,
    table: 'journal',
    cases: ['16'],
    reference: { contender: FLOOR_JOURNAL },
    comparator: '>=',
    threshold: 0.85,
  },
];
