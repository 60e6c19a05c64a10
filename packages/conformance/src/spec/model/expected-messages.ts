import type { MarkerType, MarkerWording, Message, Session } from '@keepsake/core';

/**
 * A flag the contract fixes (true or false), or leaves open in that place (`either`: a
 * race decides which instance wrote the message, or the contract does not say).
 */
export type Flag = boolean | 'either';

/** E6, F1, F2: what the contract says about one marker. Fields left out are not compared. */
export interface ExpectedMarker {
  readonly kind: 'marker';
  readonly type: MarkerType;
  /** The run the marker ends (exactly one marker per ended run). */
  readonly runId?: string;
  /** The wordings it may have (more than one while time may pass, F2: pending-retry turns neutral). */
  readonly wording?: readonly MarkerWording[];
  /** Its exact text (F1: a failed run's marker carries the error's own text). */
  readonly content?: string;
  /** F2: whether it still watches its journal (`marker.retry` set). */
  readonly watching?: boolean;
}

/**
 * The reference model's view of one message: only what the contract promises about it.
 * Messages the test wrote are compared by id and content; messages a run wrote (the
 * question, the answer, a marker) by what they say, since their ids are the store's.
 */
export type ExpectedMessage =
  | { kind: 'text'; id: string; role: Message['role']; content: string }
  /** E1, F1: the user's turn of a run, with the attachments given to beginRun. */
  | { kind: 'question'; content: string; attachments: readonly string[]; recovered: Flag }
  /** E5, E6, F1: the streamed tokens of one text segment, concatenated. */
  | { kind: 'answer'; content: string; partial: Flag; recovered: Flag }
  /** E6, F1: exactly one marker per interrupted turn. */
  | ExpectedMarker;

/** A message as the comparison sees it (the same shape for expected and actual). */
interface MessageView {
  role: string;
  content: string;
  id?: string;
  attachments?: readonly string[];
  partial?: Flag;
  recovered?: Flag;
  marker?: string;
  runId?: string | null;
  wording?: string;
  watching?: boolean;
}

function viewOfExpected(expected: ExpectedMessage): MessageView {
  switch (expected.kind) {
    case 'text':
      return { role: expected.role, content: expected.content, id: expected.id };
    case 'question':
      return {
        role: 'user',
        content: expected.content,
        attachments: expected.attachments,
        recovered: expected.recovered,
      };
    case 'answer':
      return {
        role: 'assistant',
        content: expected.content,
        partial: expected.partial,
        recovered: expected.recovered,
      };
    case 'marker':
      return {
        role: 'marker',
        content: expected.content ?? '',
        marker: expected.type,
        ...(expected.runId === undefined ? {} : { runId: expected.runId }),
        ...(expected.wording === undefined ? {} : { wording: expected.wording.join(' or ') }),
        ...(expected.watching === undefined ? {} : { watching: expected.watching }),
      };
  }
}

/** The actual flag, or `either` where the model leaves it open. */
function flag(actual: boolean, expected: Flag): Flag {
  return expected === 'either' ? 'either' : actual;
}

function viewOfMarker(message: Message, like: ExpectedMessage | undefined): MessageView {
  const marker = message.marker!;
  const expected = like?.kind === 'marker' ? like : undefined;
  const wording = expected?.wording;
  return {
    role: 'marker',
    content:
      expected?.content === undefined
        ? ''
        : typeof message.content === 'string'
          ? message.content
          : JSON.stringify(message.content),
    marker: marker.type,
    ...(expected?.runId === undefined ? {} : { runId: marker.runId }),
    ...(wording === undefined
      ? {}
      : { wording: wording.includes(marker.wording) ? wording.join(' or ') : marker.wording }),
    ...(expected?.watching === undefined ? {} : { watching: marker.retry !== undefined }),
  };
}

function viewOfActual(message: Message, like: ExpectedMessage | undefined): MessageView {
  if (message.marker !== undefined) return viewOfMarker(message, like);
  const content =
    typeof message.content === 'string' ? message.content : JSON.stringify(message.content);
  switch (like?.kind) {
    case 'text':
      return { role: message.role, content, id: message.id };
    case 'question':
      return {
        role: message.role,
        content,
        attachments: (message.attachments ?? []).map((attachment) => attachment.name),
        recovered: flag(message.recovered === true, like.recovered),
      };
    case 'answer':
      return {
        role: message.role,
        content,
        partial: flag(message.partial === true, like.partial),
        recovered: flag(message.recovered === true, like.recovered),
      };
    default:
      return { role: message.role, content, id: message.id };
  }
}

/** Both sides as views, position by position, ready for a deep-equality assertion. */
export function compareTranscript(
  actual: Pick<Session, 'messages'>,
  expected: readonly ExpectedMessage[],
): { actual: MessageView[]; expected: MessageView[] } {
  return {
    actual: actual.messages.map((message, index) => viewOfActual(message, expected[index])),
    expected: expected.map(viewOfExpected),
  };
}
