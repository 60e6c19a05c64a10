/**
 * F1, E9: an adapter's way to tell whether the instance that began a run is still alive, so
 * a run whose process died is repaired at once instead of after `recovery.graceMs`. Optional:
 * an adapter without it (or an answer of `unknown`) leaves recovery to the grace alone.
 */
export type OwnerState = 'alive' | 'gone' | 'unknown';

export interface AdapterLiveness {
  /**
   * This adapter instance's identity, recorded as the owner of each run it begins (the
   * pending turn's `ownerId`). Opaque to core; at most 512 characters.
   */
  readonly ownerId: string;
  /**
   * Whether the instance that recorded `ownerId` is alive. `gone` only when it is certain
   * (its process no longer exists): a live owner whose event loop is stalled (a long GC
   * pause, a CPU-bound tool) must still answer `alive`, so the answer may never rest on the
   * owner renewing something from its event loop. `unknown` when this instance cannot tell
   * (another host). Cheap: a follower of a silent run asks about once a second.
   */
  ownerState(ownerId: string): Promise<OwnerState>;
}
