import type { Session } from '@keepsake/core';

/**
 * What this package keeps on a Keepsake session besides its items, in one field of the
 * session document (A4: fields Keepsake does not know survive every save, and stay private to
 * full loads: never in a listing):
 * - `paused`: the serialized `RunState` of a run interrupted for approval, until a resume
 *   claims it (run-state.ts);
 * - `transactions`: the history transactions applied (operation id → digest of the
 *   transaction), so a retried transaction is applied once (`applyHistoryTransaction`).
 */
export const STATE_FIELD = 'openaiAgents';

export interface PausedRun {
  /** Names this pause; a resume claims exactly this one. */
  id: string;
  /** `RunState.toString()`, as the SDK wrote it; dropped once claimed. */
  state?: string;
  savedAt: number;
  /** Set by the resume that claimed it (B4: one claim wins). */
  claimedAt?: number;
  /** The agent that was running, by name (for listings of paused runs). */
  agentName?: string;
}

export interface AgentSessionState {
  paused?: PausedRun;
  transactions?: Record<string, string>;
}

export function stateOf(session: Session): AgentSessionState {
  const value = (session as Record<string, unknown>)[STATE_FIELD];
  return typeof value === 'object' && value !== null ? (value as AgentSessionState) : {};
}
