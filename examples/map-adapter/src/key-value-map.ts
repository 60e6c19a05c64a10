/**
 * The medium this example adapter stores into: a map of string keys to string values, the
 * shape of most key-value stores. Values are always serialized text, so nothing a caller
 * mutates after a write can reach what was stored (a real store gives the same guarantee).
 */
export type KeyValueMap = Map<string, string>;

/** Keys of one medium. Ids never contain "/" (core validates them, A1), so keys never clash. */
export const keys = {
  document: (collection: string, id: string) => `doc/${collection}/${id}`,
  documentPrefix: (collection: string) => `doc/${collection}/`,
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
