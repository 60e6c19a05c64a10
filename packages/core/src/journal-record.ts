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
 * Gives a plain object two private fields (the "return override" idiom: a base constructor
 * that returns another object makes the subclass stamp its fields onto that object), so
 * the record stays a plain object with nothing extra to see: no symbol, no hidden key.
 */
class Stamp {
  constructor(target: object) {
    // biome-ignore lint/correctness/noConstructorReturn: the point of this class (see above)
    return target;
  }
}

class LazyData extends Stamp {
  #text: string;
  #data: Record<string, unknown> | undefined;

  private constructor(target: object, text: string) {
    super(target);
    this.#text = text;
  }

  /** One descriptor, shared by every record: no accessor functions made per record. */
  static readonly descriptor: PropertyDescriptor = {
    enumerable: true,
    configurable: true,
    get(this: LazyData): Record<string, unknown> {
      this.#data ??= JSON.parse(this.#text) as Record<string, unknown>;
      return this.#data;
    },
    set(this: LazyData, value: Record<string, unknown>) {
      this.#data = value;
    },
  };

  static attach(target: object, text: string): void {
    new LazyData(target, text);
    Object.defineProperty(target, 'data', LazyData.descriptor);
  }
}

/**
 * The record an append returns. Its `data` is what was stored, not the caller's object
 * (Dates, undefined…), parsed from the stored text only when first read: streamed events
 * are rarely read back from `append`, and parsing every one showed in profiles (CPU and
 * garbage). An ordinary enumerable accessor, in the same place among the keys as in a
 * read record, to JSON.stringify, spread and equality. It is defined with a shared
 * descriptor over private fields: an object literal with its own getter and setter took
 * about 0.7 µs per streamed event, this about 0.15 µs.
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
  LazyData.attach(record, dataText);
  record.at = at;
  return record;
}
