import type { StorageAdapter } from '../adapter/adapter.js';
import { adapterCall } from '../adapter/adapter-call.js';
import { isValidId } from '../validation/ids.js';

/**
 * E8: where a run lives, kept in the `runs` collection under the run id, so a server that
 * holds only a run id (an SSE URL, a webhook) can find its session and journal.
 */
export interface RunLocation {
  readonly sessionId: string;
  readonly runId: string;
  /** When the run began (the store clock's milliseconds). */
  readonly startedAt: number;
}

const FORMAT = 'keepsake-run-location';
/** A locator that keeps meeting newer writes of the same run id is contended, not unlucky. */
const MAX_WRITE_ATTEMPTS = 5;

export function encodeRunLocation(location: RunLocation): string {
  return JSON.stringify({ format: FORMAT, ...location });
}

/** The location in `text`, or null when it is not one (damaged, or not written by core). */
export function decodeRunLocation(text: string, runId: string): RunLocation | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof parsed !== 'object' || parsed === null) return null;
  const record = parsed as Record<string, unknown>;
  if (record.format !== FORMAT || record.runId !== runId) return null;
  if (!isValidId(record.sessionId)) return null;
  if (typeof record.startedAt !== 'number' || !Number.isFinite(record.startedAt)) return null;
  return { sessionId: record.sessionId, runId, startedAt: record.startedAt };
}

/**
 * Writes the location of a run, replacing one that is there: a run id the application
 * reuses names its latest run (the one a server streaming it would mean).
 */
export async function writeRunLocation(
  adapter: StorageAdapter,
  location: RunLocation,
): Promise<void> {
  const text = encodeRunLocation(location);
  let expectedRevision: number | null = null;
  for (let attempt = 1; ; attempt++) {
    const revision: number = expectedRevision === null ? 1 : expectedRevision + 1;
    const result = await adapterCall(adapter.name, 'record where a run lives', () =>
      adapter.putDocument(
        'runs',
        location.runId,
        { kind: 'full', revision, text },
        { expectedRevision, durable: true },
      ),
    );
    if (result.ok || attempt >= MAX_WRITE_ATTEMPTS) {
      if (!result.ok) {
        throw new Error(
          `the location of run "${location.runId}" kept changing under ${attempt} writes`,
        );
      }
      return;
    }
    expectedRevision = result.currentRevision;
  }
}

export type RunLocationRead =
  | { readonly status: 'found'; readonly location: RunLocation; readonly revision: number }
  | { readonly status: 'missing' }
  /** A2: the locator did not parse; it was moved to quarantine at `quarantinedAt`. */
  | { readonly status: 'quarantined'; readonly quarantinedAt: string };

/** Reads a run's location. A locator that does not parse is quarantined, never deleted (A2). */
export async function readRunLocation(
  adapter: StorageAdapter,
  runId: string,
): Promise<RunLocationRead> {
  const stored = await adapterCall(adapter.name, 'read where a run lives', () =>
    adapter.getDocument('runs', runId),
  );
  if (stored === null) return { status: 'missing' };
  // Core writes a location in full, never as deltas: anything else is not one.
  const location = stored.deltas.length === 0 ? decodeRunLocation(stored.base, runId) : null;
  if (location !== null) return { status: 'found', location, revision: stored.revision };
  const quarantinedAt = await adapterCall(adapter.name, 'quarantine a run location', () =>
    adapter.quarantineDocument('runs', runId, 'run location does not parse'),
  );
  return { status: 'quarantined', quarantinedAt };
}

/**
 * B8: removes the locations of a deleted session's runs, each only while it still names
 * that session (a reused run id of another session keeps its own).
 */
export async function removeRunLocations(
  adapter: StorageAdapter,
  sessionId: string,
  runIds: readonly string[],
): Promise<void> {
  for (const runId of runIds) {
    const stored = await adapterCall(adapter.name, 'read where a run lives', () =>
      adapter.getDocument('runs', runId),
    );
    if (stored === null || stored.deltas.length > 0) continue;
    if (decodeRunLocation(stored.base, runId)?.sessionId !== sessionId) continue;
    await adapterCall(adapter.name, 'remove where a run lived', () =>
      adapter.deleteDocument('runs', runId, {
        expectedRevision: stored.revision,
        durable: true,
      }),
    );
  }
}
