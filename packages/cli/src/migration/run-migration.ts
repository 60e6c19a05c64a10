import { type MigrationReport, migrateBackend, type StorageAdapter } from '@keepsake/core';
import { TargetNotEmptyError } from '../cli-errors.js';
import type { Progress } from '../progress.js';
import { emptyCounts, totalDocuments } from './collection-counts.js';
import { type ComparisonReport, compareBackends } from './compare-backends.js';
import { DelegatingAdapter } from './delegating-adapter.js';
import { countDocuments, holdsDocuments } from './list-all.js';
import { ResumableTarget, type TargetMode } from './resumable-target.js';

export interface MigrationRequest {
  /** Both adapters are open already; the caller closes them. */
  source: StorageAdapter;
  target: StorageAdapter;
  /** How the target is named in messages. */
  targetName: string;
  mode: TargetMode;
  progress: Progress;
  /** Read everything back from the target and compare (skipped for an export to stdout). */
  compare: boolean;
}

export interface MigrationOutcome {
  /** What core's `migrateBackend` reports. */
  migration: MigrationReport;
  /** Documents found in place from an earlier, interrupted run (resume, force). */
  alreadyThere: number;
  /** Target documents moved to its quarantine to make room (force). */
  replaced: Array<{ item: string; location: string }>;
  /** Documents in the source's quarantine (A2): a migration does not carry them. */
  sourceQuarantined: number;
  comparison: ComparisonReport | null;
}

/**
 * H3 through core's `migrateBackend`, made resumable and observable by wrapping its target
 * (see ResumableTarget), then checked by reading both stores back (`compareBackends`).
 * Shared by `migrate`, `import` (its source is an export file) and `export` (its target is
 * one).
 */
export async function runMigration(request: MigrationRequest): Promise<MigrationOutcome> {
  const source = new DelegatingAdapter(request.source);
  const counts = await countDocuments(source);
  const total = totalDocuments(counts);
  const { progress } = request;
  const outcome: MigrationOutcome = {
    migration: {
      documents: emptyCounts(),
      journals: 0,
      journalRecords: 0,
      skippedCorrupt: [],
    },
    alreadyThere: 0,
    replaced: [],
    sourceQuarantined: (await source.listQuarantined()).length,
    comparison: null,
  };
  let documents = 0;
  let records = 0;
  const show = () => progress.update(documents, `documents, ${records} journal records`);
  const target = new ResumableTarget(request.target, source, request.mode, {
    document(_collection, _id, result) {
      documents++;
      if (result === 'already-there') outcome.alreadyThere++;
      show();
    },
    replaced(collection, id, location) {
      outcome.replaced.push({ item: `${collection}/${id}`, location });
    },
    journalRecords(count) {
      records += count;
      show();
    },
  });
  if (request.mode === 'fresh' && (await holdsDocuments(target))) {
    throw new TargetNotEmptyError(
      `${request.targetName} already holds sessions. If an earlier migration into it was interrupted, run the same command again with --resume; to merge into it (a document that differs is moved to its quarantine first), use --force.`,
    );
  }
  progress.start('copy', total);
  try {
    outcome.migration = await migrateBackend(source, target);
  } finally {
    await progress.stop();
  }
  if (request.compare) outcome.comparison = await compareBackends(source, target, progress);
  return outcome;
}
