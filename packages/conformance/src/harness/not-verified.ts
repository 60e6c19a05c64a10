/**
 * How a durability test that could not prove durability is reported (issue 24): its name
 * stays, its vitest meta carries this flag, and the clause report counts it apart.
 */
export const NOT_VERIFIED_NOTE = 'not verified (no crash simulation)';

/** The key in a test's vitest meta (the JSON reporter writes meta out). */
export const NOT_VERIFIED_META_KEY = 'keepsakeNotVerified';

export function markNotVerified(meta: object): void {
  (meta as Record<string, unknown>)[NOT_VERIFIED_META_KEY] = NOT_VERIFIED_NOTE;
}

export function isMarkedNotVerified(meta: unknown): boolean {
  return (
    typeof meta === 'object' &&
    meta !== null &&
    (meta as Record<string, unknown>)[NOT_VERIFIED_META_KEY] === NOT_VERIFIED_NOTE
  );
}
