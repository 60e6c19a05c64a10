import { describe, expect, it } from 'vitest';
import {
  describeFloors,
  FDATASYNC_PER_APPEND,
  GROUP_COMMIT_FRAMED,
  GROUP_COMMIT_JSON,
  GROUP_COMMIT_LOOP,
} from './journal-append.js';

// The floors' line is the report's evidence that a target is out of reach: its ratios must
// be the floors' over each baseline, paired round by round, never the other way round.
describe('the journal floors line', () => {
  it('prints each floor over each baseline, median of per-round ratios', () => {
    const line = describeFloors([
      { contender: GROUP_COMMIT_LOOP, samples: [100, 200, 400] },
      { contender: FDATASYNC_PER_APPEND, samples: [10, 10, 10] },
      { contender: GROUP_COMMIT_JSON, samples: [50, 150, 100] },
      { contender: GROUP_COMMIT_FRAMED, samples: [40, 80, 100] },
    ]);
    // JSON: 0.5, 0.75, 0.25 → 0.50; framed: 0.4, 0.4, 0.25 → 0.40 against the raw loop.
    // Against one fdatasync per append: JSON 5, 15, 10 → 10.00; framed 4, 8, 10 → 8.00.
    expect(line).toBe(
      `0.50× / 0.40× against ${GROUP_COMMIT_LOOP}, 10.00× / 8.00× against ${FDATASYNC_PER_APPEND}`,
    );
  });
});
