import type { JournalEventType, JournalRecord } from './schemas.js';

/**
 * A record's JSON text, with its data already serialized once. The ids are A1-safe and
 * the type one of a fixed set, so nothing but the data needs escaping: the text is spliced
 * by hand, once per streamed event, instead of a second JSON.stringify.
 */
export function recordText(record: JournalRecord, dataText: string): string {
  const { sessionId, runId, sequence, eventId, type, at } = record;
  if (!Number.isFinite(at) || !Number.isFinite(sequence)) {
    const { data: _data, ...identity } = record;
    return `${JSON.stringify(identity).slice(0, -1)},"data":${dataText}}`;
  }
  return `{"sessionId":"${sessionId}","runId":"${runId}","sequence":${sequence},"eventId":"${eventId}","type":"${type}","at":${at},"data":${dataText}}`;
}

/**
 * The record an append returns. Its `data` is what was stored, not the caller's object
 * (Dates, undefined…), parsed from the stored text only when first read: streamed events
 * are rarely read back from `append`, and parsing every one showed in profiles (CPU and
 * garbage). An ordinary enumerable property to JSON.stringify, spread and equality.
 */
export function storedRecord(
  sessionId: string,
  runId: string,
  sequence: number,
  eventId: string,
  type: JournalEventType,
  dataText: string,
  at: number,
): JournalRecord {
  let data: Record<string, unknown> | undefined;
  return {
    sessionId,
    runId,
    sequence,
    eventId,
    type,
    get data(): Record<string, unknown> {
      data ??= JSON.parse(dataText) as Record<string, unknown>;
      return data;
    },
    set data(value: Record<string, unknown>) {
      data = value;
    },
    at,
  };
}
