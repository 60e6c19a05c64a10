import type { JournalRecord, Marker, Message } from '../../validation/schemas.js';
import type { RunTerminalState } from '../run-types.js';

/** Options of `store.followRun`. */
export interface FollowRunOptions {
  /** Records with a greater sequence are followed (a client's last seen sequence). @default 0 */
  after?: number;
  /** Stops following: the iteration ends without an ending item. */
  signal?: AbortSignal;
  /**
   * How often (real time) the journal of a run another instance streams is read, where the
   * backend cannot wake a follower itself. @default the store's `follow.pollIntervalMs`
   */
  pollIntervalMs?: number;
}

/**
 * How a followed run ended (H4). `reason` says where the ending was read:
 * - `journal`: its terminal record (or the run summary's terminal state);
 * - `session`: the run has no terminal record and never will, as its session says (it left
 *   no journal and its marker is final, or its turn is answered with no journal to seal);
 * - `deleted`: the session was deleted (B8): nothing more will come;
 * - `unknown`: nothing in the session names the run (never one of its runs, or undone).
 */
export interface RunEnding {
  state: RunTerminalState | null;
  reason: 'journal' | 'session' | 'deleted' | 'unknown';
  /**
   * The marker message the session holds for a run that ended without completing (E6, F1,
   * F2): the same one a later load shows. Null for a completed run, or when the marker was
   * not there to read by the time the follower looked (its writer died right after the seal:
   * the next load's repair adds it).
   */
  markerMessage: (Message & { marker: Marker }) | null;
  /** The last sequence the follower read (0: none). */
  lastSequence: number;
}

export type FollowRunItem =
  | { kind: 'record'; record: JournalRecord }
  /**
   * E2, E3: records the read skipped (damaged, or not this journal's) and jumps in the
   * sequence, up to `lastSequence`. Following goes on after them, as core's reads do, so
   * one bad record never hides the rest of an answer.
   */
  | {
      kind: 'skipped';
      invalidRecords: Array<{ sequence: number; reason: string }>;
      gaps: Array<{ expected: number; found: number }>;
      lastSequence: number;
    }
  /** Always the last item, once (unless the follower stopped it first). */
  | { kind: 'end'; ending: RunEnding };
