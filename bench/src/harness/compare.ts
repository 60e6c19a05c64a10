import {
  findMeasurement,
  type Measurement,
  type SectionResult,
  type TableResult,
} from './results.js';
import { median, pairedRatios } from './stats.js';

/**
 * A performance target, stated as a ratio of Keepsake's figure to a reference figure in the
 * table's own unit (saves/s, appends/s, ms, bytes), so "Keepsake ≥ 0.9× the loop" on a
 * throughput table reads `{ comparator: '>=', threshold: 0.9 }`.
 */
export interface Target {
  readonly id: string;
  /** The target as the issue states it, printed in the report. */
  readonly description: string;
  readonly section: string;
  readonly table: string;
  /** Case keys the target applies to. */
  readonly cases: readonly string[];
  /** The figure Keepsake is compared with: another contender, or Keepsake in another case. */
  readonly reference: { readonly contender: string; readonly caseKey?: string };
  readonly comparator: '>=' | '<=';
  readonly threshold: number;
}

export interface Ratio {
  /** Median of Keepsake ÷ median of the reference. */
  readonly value: number;
  /** Lowest and highest ratio seen across rounds (paired by round when measured together). */
  readonly min: number;
  readonly max: number;
}

export interface TargetEvaluation {
  readonly target: Target;
  readonly caseKey: string;
  readonly ratio: Ratio;
  readonly met: boolean;
  /**
   * How far the ratio is from the threshold, as a fraction of the threshold: +0.35 is met
   * with 35% to spare, −0.2 is missed by 20%.
   */
  readonly margin: number;
}

/**
 * The ratio of two figures. Measured in the same rounds, the range comes from the per-round
 * ratios; otherwise (Keepsake against itself in another case) from the extremes.
 */
export function ratioOf(subject: Measurement, reference: Measurement, paired: boolean): Ratio {
  const value = median(subject.samples) / median(reference.samples);
  if (paired && subject.samples.length === reference.samples.length) {
    const ratios = pairedRatios(subject.samples, reference.samples);
    return { value, min: Math.min(...ratios), max: Math.max(...ratios) };
  }
  return {
    value,
    min: Math.min(...subject.samples) / Math.max(...reference.samples),
    max: Math.max(...subject.samples) / Math.min(...reference.samples),
  };
}

export function marginOf(
  ratio: number,
  comparator: Target['comparator'],
  threshold: number,
): number {
  return comparator === '>=' ? ratio / threshold - 1 : threshold / ratio - 1;
}

export function evaluateTarget(target: Target, table: TableResult): TargetEvaluation[] {
  const evaluations: TargetEvaluation[] = [];
  for (const caseKey of target.cases) {
    const subject = findMeasurement(table, caseKey, table.subject);
    const referenceCase = target.reference.caseKey ?? caseKey;
    const reference = findMeasurement(table, referenceCase, target.reference.contender);
    if (!subject || !reference) continue;
    const ratio = ratioOf(subject, reference, referenceCase === caseKey);
    const margin = marginOf(ratio.value, target.comparator, target.threshold);
    evaluations.push({ target, caseKey, ratio, met: margin >= 0, margin });
  }
  return evaluations;
}

/** Every target whose section ran, evaluated on the cases that were measured. */
export function evaluateTargets(
  targets: readonly Target[],
  sections: readonly SectionResult[],
): TargetEvaluation[] {
  const evaluations: TargetEvaluation[] = [];
  for (const target of targets) {
    const table = sections
      .find((section) => section.id === target.section)
      ?.tables.find((candidate) => candidate.id === target.table);
    if (table) evaluations.push(...evaluateTarget(target, table));
  }
  return evaluations;
}
