/**
 * How a durability test that could not prove durability is reported (issue 24): its name
 * stays, its vitest meta carries this flag, and the clause report counts it apart.
 */
export const NOT_VERIFIED_NOTE = 'not verified (no crash simulation)';

/** The key in a test's vitest meta (the JSON reporter writes meta out). */
export const NOT_VERIFIED_META_KEY = 'keepsakeNotVerified';

/**
 * Issue 42: the initializer has a `simulateCrash`, but no crash of the run lost the
 * non-durable write the suite made just before it, so a test that passed after a crash
 * proves no more than one without a crash simulation.
 */
export const LOSSLESS_CRASH_NOTE =
  'not verified: the crash simulation never lost a non-durable write';

/** Why `sharedAcrossProcesses` was not tried in a second process. */
export const NO_SECOND_PROCESS_NOTE = 'not verified (no initializerModule for a second process)';

export function markNotVerified(meta: object, note = NOT_VERIFIED_NOTE): void {
  (meta as Record<string, unknown>)[NOT_VERIFIED_META_KEY] = note;
}

export function isMarkedNotVerified(meta: unknown): boolean {
  return (
    typeof meta === 'object' &&
    meta !== null &&
    typeof (meta as Record<string, unknown>)[NOT_VERIFIED_META_KEY] === 'string'
  );
}
