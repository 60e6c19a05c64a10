/** Median, minimum and maximum of the measured rounds of one figure. */
export interface Summary {
  readonly median: number;
  readonly min: number;
  readonly max: number;
  readonly count: number;
}

/** The median of the values; the mean of the two middle values when there is an even count. */
export function median(values: readonly number[]): number {
  if (values.length === 0) throw new RangeError('median of no values');
  const sorted = [...values].sort((left, right) => left - right);
  const middle = Math.floor(sorted.length / 2);
  if (sorted.length % 2 === 1) return sorted[middle] as number;
  return ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

export function summarize(values: readonly number[]): Summary {
  if (values.length === 0) throw new RangeError('summary of no values');
  for (const value of values) {
    if (!Number.isFinite(value)) throw new RangeError(`a measured value is not finite: ${value}`);
  }
  return {
    median: median(values),
    min: Math.min(...values),
    max: Math.max(...values),
    count: values.length,
  };
}

/**
 * Per-round ratios of two figures measured in the same rounds. Pairing by round cancels
 * the slow drift of a shared machine (another job starting, the disk's cache filling), so
 * their spread is the honest noise of the ratio, narrower than dividing the extremes.
 */
export function pairedRatios(
  numerators: readonly number[],
  denominators: readonly number[],
): number[] {
  const count = Math.min(numerators.length, denominators.length);
  const ratios: number[] = [];
  for (let index = 0; index < count; index++) {
    ratios.push((numerators[index] as number) / (denominators[index] as number));
  }
  return ratios;
}
