/**
 * The ids of a listing that really start with the prefix core asked for. Core acts on
 * what an adapter lists (B5 reads retained revisions, B8 deletes them), so an adapter
 * that ignored `prefix` would otherwise hand one session's documents to another session's
 * delete: silent data loss. Core trusts no adapter with that and re-checks every id.
 */
export function idsWithPrefix(ids: readonly string[], prefix: string): string[] {
  return ids.filter((id) => id.startsWith(prefix));
}
