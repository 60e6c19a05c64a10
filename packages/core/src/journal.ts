import type { LogDurability, StorageAdapter } from './adapter.js';
import type { Clock } from './clock.js';
import {
  BackendError,
  InvalidInputError,
  JournalConflictError,
  JournalSealedError,
  KeepsakeError,
  LimitExceededError,
  RunNotActiveError,
} from './errors.js';
import { assertValidId, randomId } from './ids.js';
import {
  type JournalEventType,
  type JournalRecord,
  journalEventTypeSchema,
  journalRecordSchema,
} from './schemas.js';
import type {
  JournalDurabilityPolicy,
  JournalEventInput,
  JournalReadOptions,
  JournalReadResult,
  RunTerminalState,
} from './store-types.js';

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

/** The event types, for a check on every streamed event that allocates nothing. */
const EVENT_TYPES: ReadonlySet<string> = new Set(journalEventTypeSchema.options);

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

const READ_PAGE = 10_000;

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
function storedRecord(
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

/** Reads and validates a journal (E2 identity checks, E3 torn tails and gaps). */
export async function readJournal(
  adapter: StorageAdapter,
  sessionId: string,
  runId: string,
  options: JournalReadOptions = {},
): Promise<JournalReadResult> {
  const afterSequence = options.afterSequence ?? 0;
  const limit = options.limit ?? READ_PAGE;
  const result = await adapter.readLog(sessionId, runId, { afterSequence, limit });
  const records: JournalRecord[] = [];
  let expected = afterSequence + 1;
  let gap: JournalReadResult['gap'] = null;
  let invalidRecord: JournalReadResult['invalidRecord'] = null;
  for (const stored of result.records) {
    if (options.upToSequence !== undefined && stored.sequence > options.upToSequence) break;
    if (stored.sequence !== expected) {
      gap = { expected, found: stored.sequence };
      break;
    }
    const record = parseRecord(stored.text);
    if (
      record === null ||
      record.sequence !== stored.sequence ||
      record.sessionId !== sessionId ||
      record.runId !== runId
    ) {
      invalidRecord = { sequence: stored.sequence };
      break;
    }
    records.push(record);
    expected++;
  }
  return { records, exists: result.exists, tornTail: result.tornTail, gap, invalidRecord };
}

function parseRecord(text: string): JournalRecord | null {
  try {
    const parsed = journalRecordSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

export interface JournalWriterOptions {
  adapter: StorageAdapter;
  clock: Clock;
  sessionId: string;
  runId: string;
  policy: JournalDurabilityPolicy;
  maxEventBytes: number;
  onAppend?: (sessionId: string, durationMs: number, durable: boolean) => void;
}

/**
 * Appends to one run's journal. Appends are serialized in this process; the adapter's
 * sequence check fences writers in other processes (a canceller, a recovering instance):
 * on a conflict the writer re-reads the tail and tries again with the next sequence.
 */
export class JournalWriter {
  private lastSequence: number | null = null;
  private state: RunTerminalState | null = null;
  private queue: Promise<unknown> = Promise.resolve();
  /** Appends and moves queued or in flight: at 0 an append starts at once, unchained. */
  private busy = 0;
  /** Set once this writer saw its journal exist; a journal that then vanishes was deleted (B8). */
  private seenJournal = false;
  private deleted = false;

  constructor(private readonly options: JournalWriterOptions) {}

  get sessionId(): string {
    return this.options.sessionId;
  }

  /** Refuses every further append: the session and its journals were deleted (B8). */
  markDeleted(): void {
    this.deleted = true;
  }

  /**
   * D2: moves the journal to a rotated session id between two appends. Records are
   * copied with their sequences (their session id rewritten), then appends continue
   * under the new id. The old copy stays with the parent document.
   */
  moveTo(newSessionId: string): Promise<void> {
    const result = this.queue.then(async () => {
      const { adapter, runId } = this.options;
      const journal = await readWholeJournal(adapter, this.options.sessionId, runId);
      const records = journal.records.map((record) => ({
        sequence: record.sequence,
        text: JSON.stringify({ ...record, sessionId: newSessionId }),
      }));
      if (records.length > 0) {
        const copied = await adapter.appendLog(newSessionId, runId, records, {
          durability: 'group',
        });
        if (!copied.ok) throw new JournalConflictError(runId, 1, copied.lastSequence);
      }
      this.options.sessionId = newSessionId;
      this.lastSequence = null;
    });
    this.track(result);
    return result;
  }

  get terminalState(): RunTerminalState | null {
    return this.state;
  }

  /** Resolves once every append queued so far has settled. */
  async idle(): Promise<void> {
    await this.queue;
  }

  append(input: JournalEventInput): Promise<JournalRecord> {
    let prepared: ReturnType<JournalWriter['prepare']>;
    try {
      prepared = this.prepare(input);
    } catch (error) {
      return Promise.reject(error);
    }
    // A stream awaits each append, so nothing is usually in flight: start at once.
    const result =
      this.busy === 0 ? this.write(prepared) : this.queue.then(() => this.write(prepared));
    this.track(result);
    return result;
  }

  /** Later appends and moves wait for `operation`; `busy` counts it until it settles. */
  private track(operation: Promise<unknown>): void {
    this.busy++;
    const settled = () => {
      this.busy--;
    };
    this.queue = operation.then(settled, settled);
  }

  private prepare(input: JournalEventInput) {
    if (typeof input.type !== 'string' || !EVENT_TYPES.has(input.type)) {
      throw new InvalidInputError(`Unknown journal event type ${JSON.stringify(input.type)}`);
    }
    const type = input.type as JournalEventType;
    const eventId =
      input.eventId === undefined ? randomId() : assertValidId(input.eventId, 'event');
    const data = input.data ?? {};
    if (typeof data !== 'object' || data === null || Array.isArray(data)) {
      throw new InvalidInputError('Journal event data must be a plain object');
    }
    let dataText: string;
    try {
      dataText = JSON.stringify(data);
    } catch (cause) {
      throw new InvalidInputError('Journal event data is not serializable as JSON', { cause });
    }
    // UTF-8 takes at most 3 bytes per UTF-16 unit: most events need no byte count at all.
    const bytes =
      dataText.length * 3 <= this.options.maxEventBytes ? 0 : Buffer.byteLength(dataText);
    if (bytes > this.options.maxEventBytes) {
      throw new LimitExceededError(
        'maxJournalEventBytes',
        this.options.maxEventBytes,
        bytes,
        'Journal event',
      );
    }
    // The serialized data is spliced into the record's text (one stringify per event).
    return { type, eventId, dataText };
  }

  private async write(prepared: {
    type: JournalEventType;
    eventId: string;
    dataText: string;
  }): Promise<JournalRecord> {
    const { adapter, sessionId, runId } = this.options;
    for (let attempt = 0; ; attempt++) {
      if (this.deleted) throw new RunNotActiveError(sessionId, runId, 'its session was deleted');
      if (this.lastSequence === null) await this.refresh();
      if (this.deleted) throw new RunNotActiveError(sessionId, runId, 'its session was deleted');
      if (isFinalState(this.state) && prepared.type !== 'stream_end') {
        throw new JournalSealedError(runId, this.state!);
      }
      const record = storedRecord(
        sessionId,
        runId,
        this.lastSequence! + 1,
        prepared.eventId,
        prepared.type,
        prepared.dataText,
        this.options.clock.now(),
      );
      const durability = this.durabilityFor(prepared.type);
      const started = performance.now();
      const result = await adapter
        .appendLog(
          sessionId,
          runId,
          [{ sequence: record.sequence, text: recordText(record, prepared.dataText) }],
          {
            durability,
          },
        )
        .catch((cause: unknown) => {
          throw KeepsakeError.isInstance(cause)
            ? cause
            : new BackendError(adapter.name, 'append to a journal', { cause });
        });
      if (result.ok) {
        this.seenJournal = true;
        this.lastSequence = record.sequence;
        this.state = nextTerminalState(this.state, record.type);
        this.options.onAppend?.(sessionId, performance.now() - started, durability !== 'none');
        return record;
      }
      // Another writer took this sequence: learn the tail (and its seal) and go again.
      this.lastSequence = null;
      if (attempt >= 8) throw new JournalConflictError(runId, record.sequence, result.lastSequence);
    }
  }

  private durabilityFor(type: JournalEventType): LogDurability {
    switch (this.options.policy) {
      case 'each':
        return 'each';
      case 'group':
        return 'group';
      case 'terminal':
        return isTerminalEvent(type) ? 'group' : 'none';
    }
  }

  /** Re-reads the stored journal to learn its last sequence and terminal state. */
  async refresh(): Promise<void> {
    let after = 0;
    let state: RunTerminalState | null = null;
    for (;;) {
      const page = await readJournal(
        this.options.adapter,
        this.options.sessionId,
        this.options.runId,
        {
          afterSequence: after,
        },
      );
      if (after === 0) {
        // B8: the journal this writer appended to is gone: its session was deleted.
        if (!page.exists && this.seenJournal) this.deleted = true;
        if (page.exists) this.seenJournal = true;
      }
      for (const record of page.records) state = nextTerminalState(state, record.type);
      const last = page.records.at(-1);
      if (last !== undefined) after = last.sequence;
      if (last === undefined || page.gap !== null || page.invalidRecord !== null) break;
      if (page.records.length < READ_PAGE) break;
    }
    this.lastSequence = after;
    this.state = state;
  }
}

/** Reads a whole journal, page by page. */
export async function readWholeJournal(
  adapter: StorageAdapter,
  sessionId: string,
  runId: string,
): Promise<JournalReadResult> {
  const first = await readJournal(adapter, sessionId, runId);
  const records = [...first.records];
  let page = first;
  while (page.records.length === READ_PAGE && page.gap === null && page.invalidRecord === null) {
    page = await readJournal(adapter, sessionId, runId, {
      afterSequence: records.at(-1)!.sequence,
    });
    records.push(...page.records);
  }
  return { ...page, exists: first.exists, records };
}
