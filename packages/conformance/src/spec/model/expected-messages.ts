import type { Message, Session } from '@keepsake/core';

/**
 * The reference model's view of one message: only what the contract promises about it.
 * Messages the test wrote are compared by id and content; messages a run wrote (the
 * question, the answer, a marker) by what they say, since their ids are the store's.
 */
export type ExpectedMessage =
  | { kind: 'text'; id: string; role: Message['role']; content: string }
  /** E1, F1: the user's turn of a run, with the attachments given to beginRun. */
  | { kind: 'question'; content: string; attachments: readonly string[]; recovered: boolean }
  /** E5, E6, F1: the streamed tokens, concatenated. */
  | { kind: 'answer'; content: string; partial: boolean; recovered: boolean }
  /** E6, F1: exactly one marker per interrupted turn. */
  | { kind: 'marker'; type: 'cancelled' | 'errored' | 'interrupted' };

/** A message as the comparison sees it (the same shape for expected and actual). */
interface MessageView {
  role: string;
  content: string;
  id?: string;
  attachments?: readonly string[];
  partial?: boolean;
  recovered?: boolean;
  marker?: string;
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
      return { role: 'marker', content: '', marker: expected.type };
  }
}

function viewOfActual(message: Message, like: ExpectedMessage | undefined): MessageView {
  if (message.marker !== undefined)
    return { role: 'marker', content: '', marker: message.marker.type };
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
        recovered: message.recovered === true,
      };
    case 'answer':
      return {
        role: message.role,
        content,
        partial: message.partial === true,
        recovered: message.recovered === true,
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
