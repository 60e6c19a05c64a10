import { createHash } from 'node:crypto';
import type { JournalRecord, Message, Session, ToolCall } from '../validation/schemas.js';

/** A deterministic, A1-valid id derived from a run and an event (so re-folding is idempotent). */
export function derivedId(prefix: string, runId: string, eventId: string): string {
  const digest = createHash('sha256').update(`${runId}\u0000${eventId}`).digest('base64url');
  return `${prefix}${digest.slice(0, 24)}`;
}

export interface FoldOptions {
  runId: string;
  now: number;
  /** Tag what is folded as recovered by crash recovery (F1). */
  recovered: boolean;
  /** Mark assistant text as partial output of a cancelled or failed run (E6). */
  partial: boolean;
}

export interface FoldResult {
  /** Messages to insert (new ones), in chronological order. */
  inserted: Message[];
  /** Number of journal events that changed the transcript. */
  changes: number;
  /** Whether the journal holds any output at all (text, reasoning or tools). */
  hasOutput: boolean;
}

/**
 * Folds a run's journal into the session's messages and tool calls (E5, E6, F1, F2).
 * Assistant text between tool calls becomes one message per segment; reasoning is kept
 * as the message's display metadata (E7). Everything folded carries a journal tag
 * (run, first event, last sequence folded), and a second fold of the same journal only
 * adds what is new: de-duplication is by those tags, never by text (F4).
 * New messages are inserted at `insertAt` (before a marker), existing ones are extended.
 */
export function foldJournal(
  session: Session,
  records: readonly JournalRecord[],
  insertAt: number,
  options: FoldOptions,
): FoldResult {
  const { runId } = options;
  const existing = new Map<string, number>();
  session.messages.forEach((message, index) => {
    if (message.journal?.runId === runId) existing.set(message.journal.eventId, index);
  });
  // F4: output of this run that the application saved itself while the run was live
  // (assistant messages with the run's id but no journal tag). The journal's segments take
  // them over in order instead of adding the same text again.
  const saved = session.messages.filter(
    (message) =>
      message.role === 'assistant' &&
      message.runId === runId &&
      message.journal === undefined &&
      message.marker === undefined,
  );
  const inserted: Message[] = [];
  let changes = 0;
  let hasOutput = false;
  let segment: { message: Message; index: number | null } | null = null;

  const closeSegment = () => {
    segment = null;
  };

  for (const record of records) {
    switch (record.type) {
      case 'token':
      case 'reasoning': {
        const text = typeof record.data.text === 'string' ? record.data.text : '';
        hasOutput = true;
        if (segment === null) segment = openSegment(record);
        const current: { message: Message; index: number | null } = segment;
        const through = current.message.journal?.throughSequence ?? 0;
        if (record.sequence <= through) break;
        const updated: Message = {
          ...current.message,
          journal: {
            runId,
            eventId: current.message.journal!.eventId,
            throughSequence: record.sequence,
          },
        };
        if (record.type === 'token') {
          updated.content = `${typeof current.message.content === 'string' ? current.message.content : ''}${text}`;
        } else {
          updated.reasoning = `${current.message.reasoning ?? ''}${text}`;
        }
        replaceSegment(current, updated);
        changes++;
        break;
      }
      case 'tool': {
        hasOutput = true;
        const toolCallId = toolCallIdOf(record);
        // F4: tool calls are scoped by run: another turn may have used the same id.
        if (!session.toolCalls.some((call) => ownedBy(call, toolCallId, runId))) {
          // E5, E6, F1: every call has an assistant message of its run to belong to; a run
          // that called tools before (or without) writing text gets an empty host message,
          // keyed by the first call's event so a second fold finds it again.
          const lastMessage = segment?.message ?? inserted.at(-1) ?? hostMessage(record);
          const call: ToolCall = {
            id: toolCallId,
            name: typeof record.data.name === 'string' ? record.data.name : 'tool',
            args: record.data.args,
            done: false,
            runId,
            journal: { runId, eventId: record.eventId, throughSequence: record.sequence },
            ...(lastMessage !== undefined ? { messageId: lastMessage.id } : {}),
            ...(options.recovered ? { recovered: true } : {}),
          };
          session.toolCalls.push(call);
          changes++;
        }
        closeSegment();
        break;
      }
      case 'tool_result': {
        hasOutput = true;
        const toolCallId = toolCallIdOf(record);
        const index = session.toolCalls.findIndex((call) => ownedBy(call, toolCallId, runId));
        const call = session.toolCalls[index];
        if (call !== undefined && (call.journal?.throughSequence ?? 0) < record.sequence) {
          session.toolCalls[index] = {
            ...call,
            result: record.data.result,
            isError: record.data.isError === true,
            done: true,
            journal: {
              runId,
              eventId: call.journal?.eventId ?? record.eventId,
              throughSequence: record.sequence,
            },
          };
          changes++;
        }
        break;
      }
      default:
        break;
    }
  }
  return { inserted, changes, hasOutput };

  function openSegment(record: JournalRecord): { message: Message; index: number | null } {
    const found = existing.get(record.eventId);
    if (found !== undefined) return { message: session.messages[found]!, index: found };
    const claimed = saved.shift();
    if (claimed !== undefined) {
      // The journal holds everything the application saved and more: its text replaces it.
      const { reasoning: _reasoning, ...rest } = claimed;
      const message: Message = {
        ...rest,
        content: '',
        journal: { runId, eventId: record.eventId, throughSequence: record.sequence - 1 },
        ...(options.partial ? { partial: true } : {}),
      };
      const index = session.messages.indexOf(claimed);
      session.messages[index] = message;
      changes++;
      return { message, index };
    }
    const message: Message = {
      id: derivedId('a_', runId, record.eventId),
      role: 'assistant',
      content: '',
      createdAt: record.at,
      runId,
      journal: { runId, eventId: record.eventId, throughSequence: record.sequence - 1 },
      ...(options.recovered ? { recovered: true } : {}),
      ...(options.partial ? { partial: true } : {}),
    };
    session.messages.splice(insertAt + inserted.length, 0, message);
    inserted.push(message);
    return { message, index: insertAt + inserted.length - 1 };
  }

  /** The run's assistant message before any text: the latest one folded, else a new empty one. */
  function hostMessage(record: JournalRecord): Message {
    const folded = session.messages.findLast(
      (message) =>
        message.role === 'assistant' && message.journal?.runId === runId && !message.marker,
    );
    return folded ?? openSegment(record).message;
  }

  function replaceSegment(current: { message: Message; index: number | null }, updated: Message) {
    const index = session.messages.indexOf(current.message);
    if (index >= 0) session.messages[index] = updated;
    const insertedIndex = inserted.indexOf(current.message);
    if (insertedIndex >= 0) inserted[insertedIndex] = updated;
    current.message = updated;
  }
}

/**
 * Whether `call` is the call `toolCallId` of run `runId`. Providers number calls per
 * response (`call_0`), so an id alone names a call only within its run (F4).
 */
function ownedBy(call: ToolCall, toolCallId: string, runId: string): boolean {
  return call.id === toolCallId && call.runId === runId;
}

function toolCallIdOf(record: JournalRecord): string {
  const id = record.data.toolCallId;
  return typeof id === 'string' && id.length > 0 ? id : record.eventId;
}

/** Whether a journal holds anything worth showing (text, reasoning, tools). */
export function hasUsableOutput(records: readonly JournalRecord[]): boolean {
  return records.some(
    (record) =>
      record.type === 'tool' ||
      record.type === 'tool_result' ||
      ((record.type === 'token' || record.type === 'reasoning') &&
        typeof record.data.text === 'string' &&
        record.data.text.length > 0),
  );
}
