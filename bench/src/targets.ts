import type { Target } from './harness/compare.js';
import {
  durableSaveSection,
  HAND_WRITTEN_LOOP,
  WHOLE_FILE_REWRITE,
  WRITE_FILE_ATOMIC,
} from './sections/fs/durable-save.js';
import {
  FDATASYNC_PER_APPEND,
  GROUP_COMMIT_LOOP,
  journalAppendSection,
} from './sections/fs/journal-append.js';
import { KEEPSAKE_FS } from './sections/fs/keepsake-fs.js';
import { redisTargets } from './sections/redis/targets.js';

const HISTORY_LENGTHS = ['10', '100', '1000', '10000'];

/**
 * The performance targets of the fs adapter, each a ratio of Keepsake's figure to a
 * reference in the table's own unit (saves/s and appends/s: higher is better).
 */
export const targets: readonly Target[] = [
  {
    id: 'save-vs-loop',
    description: 'durable save ≥ 0.9× the hand-written loop',
    section: durableSaveSection.id,
    table: 'throughput',
    cases: HISTORY_LENGTHS,
    reference: { contender: HAND_WRITTEN_LOOP },
    comparator: '>=',
    threshold: 0.9,
  },
  {
    id: 'save-vs-write-file-atomic',
    description: 'durable save ≥ 1.2× write-file-atomic',
    section: durableSaveSection.id,
    table: 'throughput',
    cases: HISTORY_LENGTHS,
    reference: { contender: WRITE_FILE_ATOMIC },
    comparator: '>=',
    threshold: 1.2,
  },
  {
    id: 'save-flat-in-history',
    description:
      'one new message on a 10,000-message session ≤ 2× the time on a 10-message session ' +
      '(saves/s ≥ 0.5× those at 10 messages)',
    section: durableSaveSection.id,
    table: 'throughput',
    cases: ['10000'],
    reference: { contender: KEEPSAKE_FS, caseKey: '10' },
    comparator: '>=',
    threshold: 0.5,
  },
  {
    id: 'save-vs-rewrite',
    description:
      'one new message on a 10,000-message session ≥ 20× faster than the whole-file rewrite',
    section: durableSaveSection.id,
    table: 'throughput',
    cases: ['10000'],
    reference: { contender: WHOLE_FILE_REWRITE },
    comparator: '>=',
    threshold: 20,
  },
  {
    id: 'journal-vs-group-commit',
    description: 'journal ≥ 0.8× the raw group-commit loop',
    section: journalAppendSection.id,
    table: 'throughput',
    cases: ['1', '16', '100'],
    reference: { contender: GROUP_COMMIT_LOOP },
    comparator: '>=',
    threshold: 0.8,
  },
  {
    // With one stream every append waits for its own fdatasync whatever the design, so the
    // gain of group commit is judged where there is something to group: 100 streams.
    id: 'journal-vs-sync-each',
    description: 'journal ≥ 10× one fdatasync per append (at 100 concurrent streams)',
    section: journalAppendSection.id,
    table: 'throughput',
    cases: ['100'],
    reference: { contender: FDATASYNC_PER_APPEND },
    comparator: '>=',
    threshold: 10,
  },
  ...redisTargets,
];
