import type { ExpectedMarker, ExpectedMessage, Flag } from './expected-messages.js';
import type { RunEvent } from './race-plans.js';

/**
 * The reference fold of a run's events into the turn a transcript shows (E5, E6, F1, F4):
 * the question, one assistant message per text segment (a tool call ends a segment; a run
 * that calls a tool before any text gets one empty message to own it), the tool calls
 * scoped by run, and at most one marker. Written from the contract, not from core's code.
 */

/** The name every tool call of the model has (the ids, `call_0`…, repeat across runs). */
export const TOOL_NAME = 'lookup';

export interface ExpectedToolCall {
  readonly runId: string;
  readonly id: string;
  readonly name: string;
  /** Its result was journaled. */
  readonly done: boolean;
  /**
   * Whether its host message is checked (an assistant message of its run, F1). Not after
   * the application removed messages itself (an undo may remove the host).
   */
  readonly hosted?: boolean;
}

/** The tool-call id of the `ordinal`-th tool call of a run. */
export function toolCallId(ordinal: number): string {
  return `call_${ordinal}`;
}

/** The text of each assistant message the events make, in order (`''`: a tool call's host). */
export function segmentsOf(events: readonly RunEvent[]): string[] {
  const segments: string[] = [];
  let open = false;
  for (const event of events) {
    if (event.type === 'token') {
      if (!open) segments.push('');
      open = true;
      segments[segments.length - 1] += event.text;
      continue;
    }
    // A tool call belongs to the run's latest message, or to an empty one made for it.
    if (segments.length === 0) segments.push('');
    open = false;
  }
  return segments;
}

/** F4: the tool calls the events make, each owned by its run. */
export function toolCallsOf(runId: string, events: readonly RunEvent[]): ExpectedToolCall[] {
  let ordinal = 0;
  return events
    .filter((event) => event.type === 'tool')
    .map((event) => ({
      runId,
      id: toolCallId(ordinal++),
      name: TOOL_NAME,
      done: event.result,
    }));
}

/** Whether the events hold output a recovery would show (text or tools). */
export function hasOutput(events: readonly RunEvent[]): boolean {
  return events.length > 0;
}

export function tokensOf(texts: readonly string[]): RunEvent[] {
  return texts.map((text) => ({ type: 'token', text }));
}

/** What the contract says about one turn a run ended (or a recovery ended for it). */
export interface ExpectedTurn {
  readonly question: string;
  readonly attachments: readonly string[];
  /** F1: the question was restored by a crash repair (marked recovered). */
  readonly questionRecovered: Flag;
  /** The run's output, as folded into the transcript. */
  readonly events: readonly RunEvent[];
  /** E6: output kept from a run that did not complete is marked partial. */
  readonly partial: Flag;
  readonly recovered: Flag;
  readonly marker: ExpectedMarker | null;
}

export function turnMessages(turn: ExpectedTurn): ExpectedMessage[] {
  return [
    {
      kind: 'question',
      content: turn.question,
      attachments: turn.attachments,
      recovered: turn.questionRecovered,
    },
    ...segmentsOf(turn.events).map(
      (content): ExpectedMessage => ({
        kind: 'answer',
        content,
        partial: turn.partial,
        recovered: turn.recovered,
      }),
    ),
    ...(turn.marker === null ? [] : [turn.marker]),
  ];
}

/** A turn answered normally (E5): the question and the answer, no marker. */
export function answeredTurn(question: string, events: readonly RunEvent[]): ExpectedTurn {
  return {
    question,
    attachments: [],
    questionRecovered: false,
    events,
    partial: false,
    recovered: false,
    marker: null,
  };
}
