import { isDeepStrictEqual } from 'node:util';

/**
 * `list`'s `filter`: every key of the filter is in the metadata with an equal value (deep
 * equality, so an object or array value matches an equal one, as a JSON containment query
 * in LangGraph's database savers does for these shapes). An empty filter matches all.
 */
export function metadataMatches(metadata: unknown, filter: Record<string, unknown>): boolean {
  if (typeof metadata !== 'object' || metadata === null) return Object.keys(filter).length === 0;
  const record = metadata as Record<string, unknown>;
  return Object.entries(filter).every(
    ([key, value]) => Object.hasOwn(record, key) && isDeepStrictEqual(record[key], value),
  );
}
