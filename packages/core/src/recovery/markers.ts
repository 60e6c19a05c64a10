import { derivedId } from '../journal/transcript.js';
import { randomId } from '../validation/ids.js';
import type { Marker, MarkerType, MarkerWording, Message } from '../validation/schemas.js';

/** What each marker says. The recovered wording says plainly where the output came from. */
export const MARKER_WORDING: Record<MarkerWording, string> = {
  recovered: 'The answer was interrupted. The output above was recovered from the run journal.',
  'pending-retry':
    'The answer was interrupted. Checking the run journal for output that may still arrive…',
  neutral: 'The answer was interrupted before it finished.',
  cancelled: 'Cancelled by the user.',
  errored: 'The run failed.',
  'tool-limit': 'Stopped: the tool-call limit was reached.',
};

export function createMarker(
  type: MarkerType,
  wording: MarkerWording,
  runId: string | null,
  now: number,
  extra: Partial<Pick<Marker, 'retry'>> & { detail?: string } = {},
): Message {
  const marker: Marker = { type, wording, runId, ...(extra.retry ? { retry: extra.retry } : {}) };
  const text = extra.detail
    ? `${MARKER_WORDING[wording]} ${extra.detail}`
    : MARKER_WORDING[wording];
  return {
    // One marker per run and kind: a deterministic id makes a second one impossible (E6).
    id: runId === null ? `k_${randomId()}` : derivedId('k_', runId, `marker:${type}`),
    role: 'assistant',
    content: text,
    createdAt: now,
    marker,
    ...(runId !== null ? { runId } : {}),
  };
}

/** Rewrites a marker's wording (and drops its retry state) as a new frozen-safe object. */
export function rewordMarker(message: Message, wording: MarkerWording): Message {
  const { retry: _retry, ...marker } = message.marker!;
  return { ...message, content: MARKER_WORDING[wording], marker: { ...marker, wording } };
}
