import type { Target } from '../../harness/compare.js';
import { FROM_OWNER, serverFollowersSection } from './server-followers.js';

/**
 * Issue 36 item 2: reading a run's events from an instance that does not own it costs at
 * most 5% of the throughput of reading them from the owner, and a second follower on
 * another instance leaves the owner's sends/s at ≥ 0.95× of without it.
 */
export const followerTargets: readonly Target[] = [
  {
    id: 'server-events-from-other-instance',
    description:
      'server: events read from an instance that does not own the run ≥ 0.95× from the owner',
    section: serverFollowersSection.id,
    table: 'from-other',
    cases: ['fs', 'redis'],
    reference: { contender: FROM_OWNER },
    comparator: '>=',
    threshold: 0.95,
  },
  {
    id: 'server-owner-with-follower',
    description:
      "server: the owner's sends/s with one more follower per run on another instance ≥ 0.95× without",
    section: serverFollowersSection.id,
    table: 'with-follower',
    cases: ['fs', 'redis'],
    reference: { contender: FROM_OWNER },
    comparator: '>=',
    threshold: 0.95,
  },
];
