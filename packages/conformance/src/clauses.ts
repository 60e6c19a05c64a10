/**
 * Every clause id of the contract (docs/contract.md), in order, with a short title for
 * reports. A clause is never removed or renumbered; a new clause gets a new id.
 */
export const CLAUSES = [
  ['A1', 'ids are validated before any storage call'],
  ['A2', 'everything read is validated; corrupt documents are quarantined'],
  ['A3', 'explicit, configurable limits'],
  ['A4', 'unknown fields round-trip; _keepsake fields are reserved'],
  ['A5', 'invalid non-essential fields are reset and reported'],
  ['B1', 'saves are atomic'],
  ['B2', 'one temp file per write; failed writes never reported as done'],
  ['B3', 'fsync saves are durable'],
  ['B4', 'optimistic concurrency with revisions'],
  ['B5', 'shrinking is deliberate'],
  ['B6', 'touchUpdatedAt'],
  ['B7', 'list, summaries and the index'],
  ['B8', 'delete removes everything for good'],
  ['C1', 'flushAll is best effort and reports'],
  ['C2', 'close stops, drains, flushes and closes'],
  ['C3', 'a restart sees what was flushed or saved with fsync'],
  ['C4', 'the cache is bounded and never drops live work'],
  ['C5', 'closing refuses new work and bounds provider calls'],
  ['D1', 'one mutex per session, re-entry detected, idle entries pruned'],
  ['D2', 'renaming keeps the lock identity and the parent'],
  ['D3', 'no lock is held across slow external I/O'],
  ['D4', 'runs are fenced by their stream id'],
  ['E1', 'the pending turn is durable before the agent starts'],
  ['E2', 'journal sequences, terminal states and durability policy'],
  ['E3', 'torn tails and gaps are detected'],
  ['E4', 'periodic checkpoints'],
  ['E5', 'completing a run'],
  ['E6', 'cancelling or failing a run'],
  ['E7', 'one active run per session; reasoning is display metadata'],
  ['E8', 'a run can be found by its id alone'],
  ['E9', 'following a run to its ending'],
  ['F1', 'recovery of a dead run'],
  ['F2', 'lazy retry while the journal is not visible'],
  ['F3', 'single-flight retry; no repair under a held lock'],
  ['F4', 'recovery is idempotent'],
  ['G1', 'only completed turns are committable'],
  ['G2', 'generations coalesce; an empty commit is a no-op'],
  ['G3', 'a late commit clears only what it captured'],
  ['G4', 'a failed commit keeps the work and the agent'],
  ['G5', 'the oldest dirty segment is committed by its owner'],
  ['G6', 'drain on shutdown'],
  ['G7', 'evicting an agent commits first'],
  ['G8', 'empty session ids are safe no-ops'],
  ['G9', 'lifecycle state survives a restart'],
  ['H1', 'declared capabilities are checked; gaps are declared'],
  ['H2', 'keys of one session work together (cluster hash tags)'],
  ['H3', 'migration between backends loses nothing'],
] as const satisfies ReadonlyArray<readonly [string, string]>;

export type ClauseId = (typeof CLAUSES)[number][0];

export const CLAUSE_IDS: readonly ClauseId[] = CLAUSES.map(([id]) => id);

const CLAUSE_ID_SET: ReadonlySet<string> = new Set(CLAUSE_IDS);

export function isClauseId(value: string): value is ClauseId {
  return CLAUSE_ID_SET.has(value);
}

/** The clause a test belongs to, read from its name ("B4: …"), or null. */
export function clauseOfTestName(name: string): ClauseId | null {
  const match = /^([A-H][0-9]+):/.exec(name);
  return match !== null && isClauseId(match[1]!) ? match[1] : null;
}

/** The marker in the name of a test registered for a declared capability gap. */
export const DECLARED_GAP_MARKER = 'declared gap —';
