import { describe, expect, it } from 'vitest';
import { median, pairedRatios, summarize } from './stats.js';

describe('median', () => {
  it('takes the middle value of an odd count, whatever the order', () => {
    expect(median([9, 1, 5])).toBe(5);
  });

  it('averages the two middle values of an even count', () => {
    expect(median([4, 1, 3, 2])).toBe(2.5);
  });

  it('refuses an empty list instead of returning NaN', () => {
    expect(() => median([])).toThrow(RangeError);
  });
});

describe('summarize', () => {
  it('reports median, min, max and count', () => {
    expect(summarize([3, 10, 1, 7, 4])).toEqual({ median: 4, min: 1, max: 10, count: 5 });
  });

  it('refuses a value that is not finite (a trial that divided by zero)', () => {
    expect(() => summarize([1, Number.POSITIVE_INFINITY])).toThrow(RangeError);
  });
});

describe('pairedRatios', () => {
  it('divides round by round', () => {
    expect(pairedRatios([10, 20, 30], [5, 10, 60])).toEqual([2, 2, 0.5]);
  });

  it('stops at the shorter list', () => {
    expect(pairedRatios([10, 20], [5])).toEqual([2]);
  });
});
