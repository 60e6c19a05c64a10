import { InvalidInputError } from '../errors/input-errors.js';
import { MAX_EVENT_DATA_DEPTH } from '../validation/json-value.js';
import type { JournalEventType, JournalRecord } from '../validation/schemas.js';

/**
 * A record's JSON text, with its data already serialized once. The ids are A1-safe and
 * the type one of a fixed set, so nothing but the data needs escaping: the text is spliced
 * by hand, once per streamed event, instead of a second JSON.stringify.
 *
 * E2: every record passes here on its way to storage, so this is where its data is held to
 * what a reader accepts (assertReadableData): an append is refused rather than acknowledged
 * and then unreadable, which would hide every later record of the run.
 */
export function recordText(record: JournalRecord, dataText: string): string {
  assertReadableData(dataText);
  const { sessionId, runId, sequence, eventId, type, at } = record;
  if (!Number.isFinite(at) || !Number.isFinite(sequence)) {
    const { data: _data, ...identity } = record;
    return `${JSON.stringify(identity).slice(0, -1)},"data":${dataText}}`;
  }
  return `{"sessionId":"${sessionId}","runId":"${runId}","sequence":${sequence},"eventId":"${eventId}","type":"${type}","at":${at},"data":${dataText}}`;
}

/** Where a record keeps its stored data text and, once read, the parsed data. */
const STORED_DATA = Symbol('keepsake.storedData');

interface StoredData {
  readonly text: string;
  parsed: Record<string, unknown> | undefined;
}

/**
 * One `data` accessor shared by every record: no getter and setter made per record. Its
 * state is a non-enumerable symbol property, reached through `this`, so the accessor also
 * works through a Proxy of the record (a Vue `reactive`), an object inheriting from it and a
 * copy of its property descriptors; spread, JSON and equality never see it.
 */
const DATA_DESCRIPTOR: PropertyDescriptor = {
  enumerable: true,
  configurable: true,
  get(this: { [STORED_DATA]?: StoredData }): Record<string, unknown> | undefined {
    const stored = this[STORED_DATA];
    if (stored === undefined) return undefined;
    if (stored.parsed !== undefined) return stored.parsed;
    const parsed = JSON.parse(stored.text) as Record<string, unknown>;
    // A deep-frozen record froze its state too: parse on every read rather than throw.
    if (!Object.isFrozen(stored)) stored.parsed = parsed;
    return parsed;
  },
  set(this: { [STORED_DATA]?: StoredData }, value: Record<string, unknown>) {
    const stored = this[STORED_DATA];
    if (stored !== undefined) stored.parsed = value;
  },
};

/**
 * The record an append returns. Its `data` is what was stored, not the caller's object
 * (a nested Date as its text, undefined properties left out), parsed from the stored text
 * only when first read: streamed events are rarely read back from `append`, and parsing
 * every one showed in profiles (CPU and garbage). An ordinary enumerable accessor, in the same place among the keys as in a
 * read record, to JSON.stringify, spread and equality. It is defined with a shared
 * descriptor (DATA_DESCRIPTOR): an object literal with its own getter and setter took
 * about 0.65 µs per streamed event, this about 0.25 µs.
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
  const record = { sessionId, runId, sequence, eventId, type } as JournalRecord;
  Object.defineProperty(record, 'data', DATA_DESCRIPTOR);
  record.at = at;
  const stored: StoredData = { text: dataText, parsed: undefined };
  // Writable and configurable (not enumerable): a Proxy whose get trap wraps what it returns
  // (Vue's `reactive`) may only do so for such a property.
  Object.defineProperty(record, STORED_DATA, { value: stored, writable: true, configurable: true });
  return record;
}

/**
 * A copy of a record for another reader (a follower, H4): its own object over the same stored
 * text, so what one reader does to its record or its data never shows in another's.
 */
export function detachedRecord(record: JournalRecord): JournalRecord {
  const stored = (record as { [STORED_DATA]?: StoredData })[STORED_DATA];
  if (stored === undefined) return structuredClone(record);
  const { sessionId, runId, sequence, eventId, type, at } = record;
  return storedRecord(sessionId, runId, sequence, eventId, type, stored.text, at);
}

const OPEN_BRACE = 0x7b;

/**
 * E2: a reader accepts a record whose data is a JSON object (journal-read.ts). Data that
 * JSON.stringify turns into something else — a Date, a boxed primitive, an object whose
 * toJSON returns a string or an array — is refused here, and so is data nested deeper than
 * MAX_EVENT_DATA_DEPTH (folding it into a session would then fail, A3). Nested values are
 * stored as JSON stores them (a nested Date becomes its ISO text); the record an append
 * returns shows exactly that. Text of up to two characters per level cannot nest too deeply,
 * so streamed tokens cost one character compare.
 */
export function assertReadableData(dataText: string | undefined): void {
  if (typeof dataText !== 'string' || dataText.charCodeAt(0) !== OPEN_BRACE) {
    throw new InvalidInputError(
      `Journal event data must be stored as a JSON object, but it serializes to ${describeJsonText(dataText)} ` +
        '(a Date, a boxed primitive or a toJSON method returning something other than an object?); ' +
        'pass a plain object such as { value }. Nothing was written.',
      { path: 'data' },
    );
  }
  if (dataText.length > 2 * MAX_EVENT_DATA_DEPTH && nestingDepth(dataText) > MAX_EVENT_DATA_DEPTH) {
    throw new InvalidInputError(
      `Journal event data nests deeper than ${MAX_EVENT_DATA_DEPTH} levels, the most an event stores (A3). Nothing was written.`,
      { path: 'data' },
    );
  }
}

function describeJsonText(text: string | undefined): string {
  if (text === undefined) return 'nothing';
  switch (text.charAt(0)) {
    case '"':
      return `a string (${text.length > 40 ? `${text.slice(0, 40)}…` : text})`;
    case '[':
      return 'an array';
    case 'n':
      return 'null';
    case 't':
    case 'f':
      return 'a boolean';
    default:
      return `a number (${text.slice(0, 40)})`;
  }
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;

/** The deepest nesting of objects and arrays in JSON text (strings skipped). */
function nestingDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (inString) {
      if (code === BACKSLASH) index++;
      else if (code === QUOTE) inString = false;
    } else if (code === QUOTE) {
      inString = true;
    } else if (code === OPEN_BRACE || code === OPEN_BRACKET) {
      depth++;
      if (depth > deepest) deepest = depth;
    } else if (code === CLOSE_BRACE || code === CLOSE_BRACKET) {
      depth--;
    }
  }
  return deepest;
}
