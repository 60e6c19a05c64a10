import { describe, expect, it } from 'vitest';
import type { JournalRecord, Session } from '../validation/schemas.js';
import { foldJournal } from './transcript.js';

function record(
  sequence: number,
  type: JournalRecord['type'],
  data: Record<string, unknown> = {},
): JournalRecord {
  return {
    sessionId: 's',
    runId: 'r',
    sequence,
    eventId: `e${sequence}`,
    type,
    data,
    at: sequence,
  };
}

function emptySession(): Session {
  return {
    id: 's',
    title: '',
    createdAt: 0,
    updatedAt: 0,
    revision: 1,
    messages: [],
    pending: null,
    toolCalls: [],
    parentId: null,
    rotatedTo: null,
    metadata: {},
  };
}

const options = { runId: 'r', now: 0, recovered: true, partial: true };

describe('foldJournal', () => {
  it('E7: text between tools becomes one message per segment; reasoning is display metadata', () => {
    const session = emptySession();
    foldJournal(
      session,
      [
        record(1, 'reasoning', { text: 'think' }),
        record(2, 'token', { text: 'Hello ' }),
        record(3, 'token', { text: 'world' }),
        record(4, 'tool', { toolCallId: 't1', name: 'search', args: { q: 'x' } }),
        record(5, 'tool_result', { toolCallId: 't1', result: 42 }),
        record(6, 'token', { text: 'Done.' }),
      ],
      0,
      options,
    );
    expect(session.messages.map((message) => message.content)).toEqual(['Hello world', 'Done.']);
    expect(session.messages[0]?.reasoning).toBe('think');
    expect(session.toolCalls).toMatchObject([{ id: 't1', name: 'search', result: 42, done: true }]);
    expect(session.toolCalls[0]?.messageId).toBe(session.messages[0]?.id);
  });

  it('F4: folding again adds only what is new, by journal tags, never by text', () => {
    const session = emptySession();
    const first = [record(1, 'token', { text: 'same' }), record(2, 'token', { text: ' same' })];
    foldJournal(session, first, 0, options);
    const again = foldJournal(session, first, session.messages.length, options);
    expect(again.changes).toBe(0);
    const more = [
      ...first,
      record(3, 'token', { text: '!' }),
      record(4, 'tool', { toolCallId: 't' }),
      record(5, 'token', { text: 'same' }),
    ];
    foldJournal(session, more, session.messages.length, options);
    expect(session.messages.map((message) => message.content)).toEqual(['same same!', 'same']);
    expect(session.toolCalls).toHaveLength(1);
  });
});
