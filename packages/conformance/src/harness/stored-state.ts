import type { CloseReport, SessionStore } from '@keepsake/core';
import { KeepsakeError } from '@keepsake/core';
import { expect } from 'vitest';
import type { TestEnvironment } from './environment.js';
import type {
  AdapterMethod,
  RecordingFaultInjectingAdapter,
} from './recording-fault-injecting-adapter.js';

/**
 * Everything stored for some sessions, read by an adapter no store uses: each document's
 * revision and texts, the index, and every journal's records. Two snapshots are equal only
 * if nothing about those sessions was written in between.
 */
export interface StoredState {
  documents: Record<string, { revision: number; texts: string[] } | null>;
  index: unknown[];
  journals: Record<string, Record<string, string[]>>;
}

export async function readStoredState(
  env: TestEnvironment,
  sessionIds: readonly string[],
  namespace = env.namespace,
): Promise<StoredState> {
  const adapter = await env.rawAdapter(namespace);
  const state: StoredState = { documents: {}, index: [], journals: {} };
  for (const id of sessionIds) {
    const stored = await adapter.getDocument('sessions', id);
    state.documents[id] =
      stored === null
        ? null
        : { revision: stored.revision, texts: [stored.base, ...stored.deltas] };
    const journals: Record<string, string[]> = {};
    for (const runId of (await adapter.listLogs(id)).sort()) {
      const log = await adapter.readLog(id, runId, { afterSequence: 0, limit: 100_000 });
      journals[runId] = log.records.map((record) => record.text);
    }
    state.journals[id] = journals;
  }
  const page = await adapter.listIndex({ cursor: null, limit: 1_000 });
  // A missing or corrupt index is part of the state too (it is rebuilt from the documents).
  state.index =
    page.status === 'ok'
      ? page.entries
          .filter((entry) => sessionIds.includes((entry as { id?: string }).id ?? ''))
          .map((entry) => JSON.stringify(entry))
          .sort()
      : [page.status];
  return state;
}

/** The adapter primitives that change what is stored. */
const WRITE_METHODS: ReadonlySet<AdapterMethod> = new Set<AdapterMethod>([
  'putDocument',
  'deleteDocument',
  'quarantineDocument',
  'putIndexEntry',
  'deleteIndexEntry',
  'replaceIndex',
  'appendLog',
  'deleteLogs',
  'deleteLog',
]);

/** The write calls the store made since the adapter's call log had `mark` entries. */
export function writesSince(adapter: RecordingFaultInjectingAdapter, mark: number): string[] {
  return adapter.calls
    .slice(mark)
    .filter((call) => WRITE_METHODS.has(call.method))
    .map((call) => `${call.method}(${String(call.args[0])}, ${String(call.args[1])})`);
}

/**
 * C2: close() resolves, leaves the store closed, and reports every session it could not
 * flush with a typed error. Returns the report.
 */
export async function expectCloseFinishes(store: SessionStore): Promise<CloseReport> {
  const report = await store.close();
  expect(store.closed).toBe(true);
  expect(store.diagnostics().state).toBe('closed');
  for (const failure of report.flush.failed) {
    expect(KeepsakeError.isInstance(failure.error), `flush of ${failure.sessionId}`).toBe(true);
  }
  return report;
}
