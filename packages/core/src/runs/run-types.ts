import type { MessageInput } from '../sessions/session-types.js';
import type {
  Attachment,
  JournalEventType,
  JournalRecord,
  Session,
} from '../validation/schemas.js';

export interface BeginRunInput {
  userMessage: MessageInput;
  attachments?: Attachment[];
  /** A1-valid run (and stream) id; random when omitted. */
  runId?: string;
  /**
   * B5, E1: the id of a message of the transcript to answer again from (a regenerate): that
   * message and every message after it are dropped in the same write that records the
   * pending turn (a deliberate shrink; the revision before it is retained), so a crash can
   * never leave the question twice. An id the transcript does not have is refused with
   * `InvalidInputError`, and nothing is written.
   */
  replaceFrom?: string;
}

export type RunTerminalState =
  | 'completed'
  | 'interrupted-by-user'
  | 'interrupted-by-crash'
  | 'errored'
  | 'tool-limit-reached';

export interface JournalEventInput {
  type: JournalEventType;
  data?: Record<string, unknown>;
  /** Unique within the run; random when omitted. */
  eventId?: string;
}

export interface JournalReadOptions {
  /** Records with sequence greater than this. @default 0 */
  afterSequence?: number;
  /** Records with sequence at most this. */
  upToSequence?: number;
  /** @default 10_000 */
  limit?: number;
}

export interface JournalReadResult {
  records: JournalRecord[];
  exists: boolean;
  /** E3: the journal ended in a torn record that was ignored. */
  tornTail: boolean;
  /** E3: the first jump in the sequence (see `gaps`); records go on after it. */
  gap: { expected: number; found: number } | null;
  /** E2: the first record skipped as invalid (see `invalidRecords`). */
  invalidRecord: { sequence: number } | null;
  /** E3: every jump in the sequence this read saw, in order. */
  gaps: Array<{ expected: number; found: number }>;
  /**
   * E2: every record skipped because it does not parse or its identity does not match its
   * journal (session, run, sequence, an event id used earlier), with the reason. The
   * records after it are read on.
   */
  invalidRecords: Array<{ sequence: number; reason: string }>;
  /** The last sequence stored that this read reached, valid or not (0: none). */
  lastSequence: number;
}

export interface RunSummary {
  sessionId: string;
  runId: string;
  /** The last sequence stored (a damaged record counts: the next append goes after it). */
  lastSequence: number;
  terminalState: RunTerminalState | null;
  exists: boolean;
  /** The type of the last intact record, or null for an empty journal. */
  lastEventType: JournalEventType | null;
  /** The event id of the last intact record, or null for an empty journal. */
  lastEventId: string | null;
}

export interface CompleteRunInput {
  /**
   * The assistant messages to write. When omitted, they are built from the journal:
   * streamed tokens become the assistant message, reasoning becomes its display metadata.
   */
  assistantMessages?: MessageInput[];
}

export type CancelOutcome =
  | { cancelled: true; sessionId: string; runId: string }
  | { cancelled: false; reason: 'not-active' | 'already-finished' | 'no-pending-turn' };

export interface RunHandle {
  readonly sessionId: string;
  /** Also the stream id: the fencing token of the pending turn (D4). */
  readonly runId: string;
  readonly streamId: string;
  /** E2: appends one event; resolves with its record once it is as durable as the policy says. */
  append(event: JournalEventInput): Promise<JournalRecord>;
  /** E4: counts activity (tool completions count automatically) for the periodic checkpoint. */
  recordActivity(): void;
  /** E5. Throws RunNotActiveError when the run was fenced out (D4). */
  complete(input?: CompleteRunInput): Promise<Session>;
  /** E6. */
  cancel(): Promise<CancelOutcome>;
  /** E6 with an error marker and terminal state errored. */
  fail(error: { message: string; code?: string }): Promise<CancelOutcome>;
  /** Whether this run still owns its session's pending turn in this process. */
  readonly active: boolean;
  /**
   * E6, F1: complete(), cancel() or fail() threw and the run is still active: retry the
   * ending, or let the grace end it (the store's loads repair the turn once it has passed).
   */
  readonly stalled: boolean;
}
