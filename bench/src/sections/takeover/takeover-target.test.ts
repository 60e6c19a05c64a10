import { describe, expect, it } from 'vitest';
import { judgeTakeover } from './takeover-target.js';

describe('judgeTakeover (issue 36: ≤ 5 s p50, ≤ 10 s max)', () => {
  it('takes the mean of the middle two of an even count as the median, and the largest as the max', () => {
    expect(judgeTakeover([4_000, 1_000, 6_000, 2_000])).toMatchObject({
      p50: 3_000,
      max: 6_000,
      met: true,
    });
    expect(judgeTakeover([3_000, 9_000, 1_000])).toMatchObject({
      p50: 3_000,
      max: 9_000,
      met: true,
    });
  });

  it('misses when the median is above 5 s, or any kill took more than 10 s', () => {
    expect(judgeTakeover([5_500, 5_600, 1_000])).toMatchObject({ met: false });
    expect(judgeTakeover([5_500, 5_600, 1_000]).verdict).toContain('p50 above 5 s');
    expect(judgeTakeover([1_000, 1_000, 10_001]).verdict).toContain('max above 10 s');
    expect(judgeTakeover([5_000, 5_000, 10_000]).met).toBe(true);
  });

  it('refuses an empty measurement instead of judging it met', () => {
    expect(() => judgeTakeover([])).toThrow(/no takeover/);
  });
});
