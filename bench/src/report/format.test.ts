import { describe, expect, it } from 'vitest';
import type { Metric } from '../harness/results.js';
import { formatFigure, formatRatio, formatValue, significant } from './format.js';

const milliseconds: Metric = { unit: 'ms', higherIsBetter: false, format: 'milliseconds' };
const bytes: Metric = { unit: 'bytes', higherIsBetter: false, format: 'bytes' };

describe('significant', () => {
  it('keeps three significant digits with thousands separators', () => {
    expect(significant(2_345.6)).toBe('2,350');
    expect(significant(98.76)).toBe('98.8');
    expect(significant(0.51234)).toBe('0.512');
    expect(significant(123_456)).toBe('123,000');
  });
});

describe('formatValue', () => {
  it('switches milliseconds to seconds past ten seconds', () => {
    expect(formatValue(milliseconds, 950)).toBe('950 ms');
    expect(formatValue(milliseconds, 12_345)).toBe('12.3 s');
  });

  it('prints sizes in B, KiB or MiB', () => {
    expect(formatValue(bytes, 512)).toBe('512 B');
    expect(formatValue(bytes, 72_800)).toBe('71.1 KiB');
    expect(formatValue(bytes, 90 * 2 ** 20)).toBe('90.0 MiB');
  });
});

describe('formatFigure', () => {
  it("prints min and max in the median's unit so the range reads at a glance", () => {
    expect(formatFigure(milliseconds, [9_000, 12_000, 10_500])).toBe('10.5 s (9.00–12.0)');
    expect(formatFigure(bytes, [1_000, 2_048, 4_096])).toBe('2.00 KiB (0.977–4.00)');
  });
});

describe('formatRatio', () => {
  it('shows two decimals below 10× and three significant digits above', () => {
    expect(formatRatio(0.873)).toBe('0.87×');
    expect(formatRatio(31.42)).toBe('31.4×');
  });
});
