import type { Message, Session, SessionStore } from '@keepsake/core';
import type { AgentInputItem } from '@openai/agents-core';
import type { StoredItem } from './item-codec.js';

/**
 * A streamed run this process is producing for a session (streams.ts). While it lives, the
 * items the SDK's runner adds to the session go through it: it places the run's user turn
 * and the anchors that keep core's crash repair from adding streamed text twice.
 */
export interface LiveRunHook {
  /**
   * The session's whole transcript after `addItems` while the run is live, called under the
   * session lock; null when the run no longer owns the session's turn (stopped, or repaired
   * after its producer was presumed dead): what it adds then is not kept (E6, D4).
   */
  planAppend(
    session: Session,
    stored: StoredItem[],
    items: AgentInputItem[],
    now: number,
  ): Message[] | null;
  /** Called once those messages are durable. */
  appended(): void;
}

const registry = new WeakMap<SessionStore, Map<string, LiveRunHook>>();

export function liveRunOf(store: SessionStore, keepsakeId: string): LiveRunHook | undefined {
  return registry.get(store)?.get(keepsakeId);
}

export function registerLiveRun(
  store: SessionStore,
  keepsakeId: string,
  hook: LiveRunHook,
): () => void {
  let runs = registry.get(store);
  if (runs === undefined) {
    runs = new Map();
    registry.set(store, runs);
  }
  runs.set(keepsakeId, hook);
  return () => {
    if (runs.get(keepsakeId) === hook) runs.delete(keepsakeId);
  };
}
