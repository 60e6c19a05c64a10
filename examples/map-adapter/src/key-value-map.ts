import { assertCollection, assertDocumentId, type Collection } from '@keepsake/core';

/**
 * The medium this example adapter stores into: a map of string keys to string values, the
 * shape of most key-value stores. Values are always serialized text, so nothing a caller
 * mutates after a write can reach what was stored (a real store gives the same guarantee).
 */
export type KeyValueMap = Map<string, string>;

/**
 * Keys of one medium. A document id is checked against its collection's shape before it
 * becomes a key (A1: core's `assertDocumentId` throws InvalidIdError), and ids never
 * contain "/", so keys never clash; each collection has its own prefix.
 */
export const keys = {
  document: (collection: Collection, id: string) =>
    `doc/${collection}/${assertDocumentId(collection, id)}`,
  documentPrefix: (collection: Collection) => `doc/${assertCollection(collection)}/`,
  index: 'index',
  log: (sessionId: string, runId: string) => `log/${sessionId}/${runId}`,
  logPrefix: (sessionId: string) => `log/${sessionId}/`,
  quarantineList: 'quarantine',
  quarantined: (location: string) => `quarantined/${location}`,
} as const;

/** Keys of the map that start with `prefix`, in code-unit order (a stable listing order). */
export function keysWithPrefix(map: KeyValueMap, prefix: string): string[] {
  const found: string[] = [];
  for (const key of map.keys()) if (key.startsWith(prefix)) found.push(key);
  return found.sort();
}
