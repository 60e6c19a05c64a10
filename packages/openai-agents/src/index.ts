export { RunStateAlreadyResumedError } from './errors.js';
export { keepsakeIdOf, sessionIdOfKeepsake } from './ids.js';
export { decodeItem, encodeItem, type StoredItem } from './item-codec.js';
export {
  loadRunState,
  type PausedRunInfo,
  type PausedRunTarget,
  pausedRunOf,
  readRunState,
  saveRunState,
} from './run-state.js';
export { KeepsakeSession, type KeepsakeSessionOptions } from './session.js';
export { type AgentSessionState, type PausedRun, STATE_FIELD } from './session-state.js';
export { ANCHOR_FIELD, ITEMS_FIELD } from './stored-message.js';
export type { JournaledAgentEvent } from './stream-records.js';
export {
  type AgentRunOutcome,
  type AgentStreamItem,
  type AgentStreamRunOptions,
  type AgentStreams,
  type AgentStreamsOptions,
  createAgentStreams,
  RUN_FAILED_TEXT,
  type StartedAgentRun,
} from './streams.js';
