import type { RunTerminalState } from '../runs/run-types.js';
import type { JournalEventType, JournalRecord } from '../validation/schemas.js';

const TERMINAL_EVENTS = new Set<JournalEventType>([
  'done',
  'error',
  'cancel',
  'tool_limit',
  'interrupted',
]);

/** Terminal states after which nothing but `stream_end` may be appended. */
const FINAL_STATES = new Set<RunTerminalState>([
  'completed',
  'interrupted-by-user',
  'tool-limit-reached',
]);

export function isTerminalEvent(type: JournalEventType): boolean {
  return TERMINAL_EVENTS.has(type);
}

export function isFinalState(state: RunTerminalState | null): boolean {
  return state !== null && FINAL_STATES.has(state);
}

/**
 * E2 terminal precedence: `done` and `error` supersede an earlier error or a presumed
 * crash; a final state (completed, cancelled, tool limit) is never superseded; a
 * transport `stream_end` never changes the state.
 */
export function nextTerminalState(
  current: RunTerminalState | null,
  type: JournalEventType,
): RunTerminalState | null {
  if (isFinalState(current)) return current;
  switch (type) {
    case 'done':
      return 'completed';
    case 'error':
      return 'errored';
    case 'cancel':
      return 'interrupted-by-user';
    case 'tool_limit':
      return 'tool-limit-reached';
    case 'interrupted':
      return current ?? 'interrupted-by-crash';
    default:
      return current;
  }
}

export function terminalStateOf(records: readonly JournalRecord[]): RunTerminalState | null {
  let state: RunTerminalState | null = null;
  for (const record of records) state = nextTerminalState(state, record.type);
  return state;
}
