import type { Target } from '../../harness/compare.js';
import { FLOOR, s3DurableSection } from './s3-durable.js';

/**
 * The S3 adapter's target (issue 19): one request per save, indexed or not (the summary
 * rides in the document's metadata), counted by SDK middleware on a warm store. Listed in
 * `src/targets.ts` beside the fs and Redis targets.
 */
export const s3Targets: readonly Target[] = [
  {
    id: 's3-requests-per-save',
    description: 'S3: a save is 1 request (1 PUT), indexed or with skipIndex',
    section: s3DurableSection.id,
    table: 'requests',
    cases: ['save', 'save-skip-index'],
    reference: { contender: FLOOR },
    comparator: '<=',
    threshold: 1,
  },
];
