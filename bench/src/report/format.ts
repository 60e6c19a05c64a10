import type { Measurement, Metric } from '../harness/results.js';
import { median, summarize } from '../harness/stats.js';

interface Scale {
  readonly divisor: number;
  readonly unit: string;
}

/** The unit a figure is printed in: rates as they are, times in ms or s, sizes in B, KiB or MiB. */
function scaleFor(metric: Metric, value: number): Scale {
  switch (metric.format) {
    case 'rate':
      return { divisor: 1, unit: metric.unit };
    case 'milliseconds':
      return value >= 10_000 ? { divisor: 1000, unit: 's' } : { divisor: 1, unit: 'ms' };
    case 'bytes':
      if (Math.abs(value) >= 2 ** 20) return { divisor: 2 ** 20, unit: 'MiB' };
      if (Math.abs(value) >= 1024) return { divisor: 1024, unit: 'KiB' };
      return { divisor: 1, unit: 'B' };
  }
}

export function formatValue(metric: Metric, value: number): string {
  const scale = scaleFor(metric, value);
  return `${significant(value / scale.divisor)} ${scale.unit}`;
}

export function formatBytes(bytes: number): string {
  return formatValue({ unit: 'bytes', higherIsBetter: false, format: 'bytes' }, bytes);
}

/** Median with min–max in the median's unit: "2,310 saves/s (2,120–2,400)". */
export function formatFigure(metric: Metric, samples: readonly number[]): string {
  const summary = summarize(samples);
  const scale = scaleFor(metric, summary.median);
  const show = (value: number) => significant(value / scale.divisor);
  return `${show(summary.median)} ${scale.unit} (${show(summary.min)}–${show(summary.max)})`;
}

/** Three significant digits, with thousands separators for large values: 2,340 · 98.7 · 0.512. */
export function significant(value: number): string {
  if (value === 0 || !Number.isFinite(value)) return String(value);
  const magnitude = Math.floor(Math.log10(Math.abs(value)));
  if (magnitude >= 2) {
    const factor = 10 ** (magnitude - 2);
    return (Math.round(value / factor) * factor).toLocaleString('en-US');
  }
  return value.toFixed(Math.max(0, 2 - magnitude));
}

/** A ratio to 2 decimals below 10, 3 significant digits above: 0.87×, 1.20×, 31.4×. */
export function formatRatio(ratio: number): string {
  return `${Math.abs(ratio) < 10 ? ratio.toFixed(2) : significant(ratio)}×`;
}

export function formatPercent(fraction: number): string {
  return `${Math.round(Math.abs(fraction) * 100)}%`;
}

/** One line per finished case for the progress log: each contender's median. */
export function describeMeasurements(metric: Metric, measurements: readonly Measurement[]): string {
  return measurements
    .map(({ contender, samples }) => `${contender} ${formatValue(metric, median(samples))}`)
    .join(' · ');
}
