import { COLLECTIONS, type Collection } from '@keepsake/core';

/**
 * Per-collection document counts. Every collection core knows (its `COLLECTIONS`) is
 * counted, so a migration, an export or a verify never skips one it was not told about.
 */
export type CollectionCounts = Record<Collection, number>;

export function emptyCounts(): CollectionCounts {
  return Object.fromEntries(COLLECTIONS.map((collection) => [collection, 0])) as CollectionCounts;
}

export function totalDocuments(counts: CollectionCounts): number {
  return COLLECTIONS.reduce((total, collection) => total + counts[collection], 0);
}

/** How the collections beyond sessions, revisions and lifecycle read in a summary line. */
const OTHER_COLLECTION_NAMES: ReadonlyArray<readonly [Collection, string]> = [
  ['runs', 'run records'],
  ['checkpoints', 'checkpoints'],
  ['checkpoint-writes', 'checkpoint writes'],
];

/**
 * `, 2 run records, 5 checkpoints` for the other collections that hold documents, `''`
 * when none does (so a summary of a store without them reads as it always did).
 */
export function otherCollectionsText(counts: CollectionCounts): string {
  return OTHER_COLLECTION_NAMES.filter(([collection]) => counts[collection] > 0)
    .map(([collection, name]) => `, ${counts[collection]} ${name}`)
    .join('');
}
