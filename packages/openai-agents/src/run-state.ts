import { InvalidInputError, randomId, type SessionStore } from '@keepsake/core';
import { RunState } from '@openai/agents-core';
import { RunStateAlreadyResumedError } from './errors.js';
import { keepsakeIdOf } from './ids.js';
import type { AnyAgent, AnyRunState, RunStateOf } from './sdk-types.js';
import type { KeepsakeSession } from './session.js';
import { type PausedRun, stateOf } from './session-state.js';
import { loadOrNull, updateSession } from './session-writes.js';

/** Where a paused run is kept: a `KeepsakeSession`, or a store and an Agents SDK session id. */
export type PausedRunTarget = KeepsakeSession | { store: SessionStore; sessionId: string };

/** The paused run of a session, as `readRunState` and `loadRunState` give it. */
export interface PausedRunInfo {
  /** Names this pause; `loadRunState` claims exactly this one. */
  pauseId: string;
  savedAt: number;
  agentName: string | null;
  /** Whether a resume claimed it already (it can then not be resumed again). */
  claimed: boolean;
}

function targetOf(target: PausedRunTarget): { store: SessionStore; keepsakeId: string } {
  if ('keepsakeId' in target) return { store: target.store, keepsakeId: target.keepsakeId };
  return { store: target.store, keepsakeId: keepsakeIdOf(target.sessionId) };
}

/**
 * Stores the `RunState` of a run interrupted for approval with its session, durably (B3), and
 * returns the pause id. One paused run per session: a run that pauses again (a resumed run
 * meeting another approval) replaces it. Any instance over the same backend can resume it,
 * also after this process died.
 */
export async function saveRunState(
  target: PausedRunTarget,
  state: AnyRunState,
  options: { durable?: boolean } = {},
): Promise<string> {
  if (
    !(state instanceof RunState) &&
    typeof (state as { toString?: unknown })?.toString !== 'function'
  ) {
    throw new InvalidInputError('saveRunState() takes the RunState of a run (result.state)', {
      path: 'state',
    });
  }
  const text = state.toString();
  const { store, keepsakeId } = targetOf(target);
  const pauseId = randomId();
  const agentName = (state as { _currentAgent?: { name?: unknown } })._currentAgent?.name;
  return updateSession(
    store,
    keepsakeId,
    { durable: options.durable ?? true, createWithTitle: '' },
    (session) => {
      const paused: PausedRun = {
        id: pauseId,
        state: text,
        savedAt: store.clock.now(),
        ...(typeof agentName === 'string' ? { agentName } : {}),
      };
      const current = session === null ? {} : stateOf(session);
      return { result: pauseId, state: { ...current, paused } };
    },
  );
}

/** The session's paused run, without claiming it (to show what waits for approval), or null. */
export async function pausedRunOf(target: PausedRunTarget): Promise<PausedRunInfo | null> {
  const { store, keepsakeId } = targetOf(target);
  const session = await loadOrNull(store, keepsakeId, true);
  const paused = session === null ? undefined : stateOf(session).paused;
  return paused === undefined ? null : infoOf(paused);
}

/**
 * Reads the session's paused run without claiming it: the `RunState` to show its
 * interruptions (what needs approval). Resume with the state `loadRunState` gives.
 */
export async function readRunState<TAgent extends AnyAgent>(
  target: PausedRunTarget,
  agent: TAgent,
): Promise<RunStateOf<TAgent> | null> {
  const { store, keepsakeId } = targetOf(target);
  const session = await loadOrNull(store, keepsakeId, true);
  const paused = session === null ? undefined : stateOf(session).paused;
  if (paused?.state === undefined) return null;
  return RunState.fromString(agent, paused.state);
}

/**
 * Claims the session's paused run for a resume and returns its `RunState` (approve or reject
 * its interruptions, then `run(agent, state, { session })`), or null when the session has
 * none. The claim is durable before this returns and conditional on the session's revision
 * (B4), so of two approvers racing, on one instance or two, exactly one gets the state; the
 * other gets `RunStateAlreadyResumedError`, as does any later claim of the same pause.
 * `pauseId` claims that pause only (a stale approval screen cannot resume a newer pause).
 */
export async function loadRunState<TAgent extends AnyAgent>(
  target: PausedRunTarget,
  agent: TAgent,
  options: { pauseId?: string; durable?: boolean } = {},
): Promise<RunStateOf<TAgent> | null> {
  const { store, keepsakeId } = targetOf(target);
  const claimed = await updateSession(
    store,
    keepsakeId,
    { durable: options.durable ?? true },
    (session) => {
      const state = session === null ? {} : stateOf(session);
      const paused = state.paused;
      if (paused === undefined) {
        if (options.pauseId !== undefined) {
          throw new RunStateAlreadyResumedError(keepsakeId, options.pauseId);
        }
        return { result: null };
      }
      if (options.pauseId !== undefined && options.pauseId !== paused.id) {
        throw new RunStateAlreadyResumedError(keepsakeId, options.pauseId);
      }
      if (paused.claimedAt !== undefined || paused.state === undefined) {
        throw new RunStateAlreadyResumedError(keepsakeId, paused.id);
      }
      const { state: text, ...rest } = paused;
      return {
        result: text,
        state: { ...state, paused: { ...rest, claimedAt: store.clock.now() } },
      };
    },
  );
  if (claimed === null) return null;
  return RunState.fromString(agent, claimed);
}

function infoOf(paused: PausedRun): PausedRunInfo {
  return {
    pauseId: paused.id,
    savedAt: paused.savedAt,
    agentName: paused.agentName ?? null,
    claimed: paused.claimedAt !== undefined,
  };
}
