import {
  MARKER_WORDING,
  type Marker,
  type MarkerType,
  type MarkerWording,
  type RunTerminalState,
} from '@keepsake/core';
import { jsonSchema } from 'ai';

/**
 * How an answer ended when it did not complete: Keepsake's marker (E6, F1), carried to the
 * AI SDK as a data part of the assistant message, `{ type: 'data-keepsake-marker', data }`.
 * The same part ends a resumed stream (live) and closes the message `loadChat` returns
 * (stored), so a page sees one shape whether it watched the answer end or reloaded later.
 */
export interface KeepsakeMarkerData {
  /** `interrupted` (the server died), `cancelled` (stopped), `errored`, `tool-limit`. */
  type: MarkerType;
  /** Which of Keepsake's texts applies (`recovered`: the output above came from the journal). */
  wording: MarkerWording;
  /** The text to show, in English: Keepsake's wording, plus the error for `errored`. */
  text: string;
}

/** The data part name: a `UIMessage` with these parts declares `{ 'keepsake-marker': KeepsakeMarkerData }`. */
export const MARKER_DATA_NAME = 'keepsake-marker';
export const MARKER_PART_TYPE = `data-${MARKER_DATA_NAME}` as const;

/** The data types Keepsake adds to a chat, for `UIMessage<Metadata, YourDataParts & KeepsakeDataTypes>`. */
export type KeepsakeDataTypes = { [MARKER_DATA_NAME]: KeepsakeMarkerData };

export interface KeepsakeMarkerPart {
  type: typeof MARKER_PART_TYPE;
  data: KeepsakeMarkerData;
}

const markerTypes: readonly MarkerType[] = ['interrupted', 'cancelled', 'errored', 'tool-limit'];
const markerWordings: readonly MarkerWording[] = Object.keys(MARKER_WORDING) as MarkerWording[];

/**
 * `validateUIMessages({ messages, dataSchemas: { ...yours, ...keepsakeDataSchemas } })`: once
 * `dataSchemas` is given, the AI SDK refuses a data part it has no schema for.
 */
export const keepsakeDataSchemas = {
  [MARKER_DATA_NAME]: jsonSchema<KeepsakeMarkerData>(
    {
      type: 'object',
      properties: {
        type: { type: 'string', enum: [...markerTypes] },
        wording: { type: 'string', enum: [...markerWordings] },
        text: { type: 'string' },
      },
      required: ['type', 'wording', 'text'],
      additionalProperties: false,
    },
    {
      validate: (value) =>
        isMarkerData(value)
          ? { success: true, value }
          : { success: false, error: new Error('not a Keepsake marker: { type, wording, text }') },
    },
  ),
};

export function isMarkerData(value: unknown): value is KeepsakeMarkerData {
  if (typeof value !== 'object' || value === null) return false;
  const candidate = value as Record<string, unknown>;
  return (
    Object.keys(candidate).length === 3 &&
    markerTypes.includes(candidate.type as MarkerType) &&
    markerWordings.includes(candidate.wording as MarkerWording) &&
    typeof candidate.text === 'string'
  );
}

/** The part for a marker stored in a session (its message's text is the marker's text). */
export function markerPartOf(marker: Marker, text: string): KeepsakeMarkerPart {
  return { type: MARKER_PART_TYPE, data: { type: marker.type, wording: marker.wording, text } };
}

/**
 * The part a resumed stream ends with, derived from the journal as core derives the marker
 * it stores (turn-markers.ts): the same type and wording `loadChat` shows afterwards.
 */
export function markerPartForEnding(
  state: RunTerminalState | null,
  journal: { hadOutput: boolean; errorMessage: string | null },
): KeepsakeMarkerPart | null {
  switch (state) {
    case 'completed':
      return null;
    case 'interrupted-by-user':
      return part('cancelled', 'cancelled');
    case 'errored':
      return part('errored', 'errored', journal.errorMessage ?? '');
    case 'tool-limit-reached':
      return part('tool-limit', 'tool-limit');
    default:
      return part('interrupted', journal.hadOutput ? 'recovered' : 'neutral');
  }
}

function part(type: MarkerType, wording: MarkerWording, detail = ''): KeepsakeMarkerPart {
  const text = detail.length > 0 ? `${MARKER_WORDING[wording]} ${detail}` : MARKER_WORDING[wording];
  return { type: MARKER_PART_TYPE, data: { type, wording, text } };
}
