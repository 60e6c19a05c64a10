import { describe, expect, it } from 'vitest';
import type { Session } from '../../validation/schemas.js';
import { decodeSession, encodeDelta, encodeFull, headOf } from './document-codec.js';

function session(overrides: Partial<Session> = {}): Session {
  return {
    id: 'chat',
    title: 'T',
    createdAt: 1,
    updatedAt: 2,
    revision: 1,
    messages: [{ id: 'm1', role: 'user', content: 'hi', createdAt: 1 }],
    pending: null,
    toolCalls: [],
    parentId: null,
    rotatedTo: null,
    metadata: {},
    ...overrides,
  };
}

describe('document codec', () => {
  it('folds a base and its deltas in order', () => {
    const base = session();
    const appended = [{ id: 'm2', role: 'assistant' as const, content: 'hello', createdAt: 2 }];
    const delta = encodeDelta({ ...headOf(base), title: 'Renamed' }, 1, appended);
    const decoded = decodeSession(
      'chat',
      { revision: 2, base: encodeFull(base), deltas: [delta] },
      0,
    );
    expect(decoded.ok).toBe(true);
    if (!decoded.ok) return;
    expect(decoded.session.title).toBe('Renamed');
    expect(decoded.session.revision).toBe(2);
    expect(decoded.session.messages.map((message) => message.id)).toEqual(['m1', 'm2']);
  });

  it('a delta with the head text spliced in is the text of the whole delta stringified', () => {
    const head = { ...headOf(session()), title: 'quote " and \u2028', metadata: { a: [1, null] } };
    const appended = [{ id: 'm2', role: 'user' as const, content: 'é\n', createdAt: 2 }];
    const whole = JSON.stringify({ _keepsakeDelta: 1, baseCount: 3, head, appended });
    expect(encodeDelta(head, 3, appended, JSON.stringify(head))).toBe(whole);
    expect(encodeDelta(head, 3, appended)).toBe(whole);
  });

  it('A2: a delta that does not fit its base makes the document unreadable', () => {
    const delta = encodeDelta(headOf(session()), 5, []);
    const decoded = decodeSession(
      'chat',
      { revision: 2, base: encodeFull(session()), deltas: [delta] },
      0,
    );
    expect(decoded.ok).toBe(false);
  });

  it('A2: truncated JSON and a foreign id are unreadable', () => {
    const text = encodeFull(session());
    expect(decodeSession('chat', { revision: 1, base: text.slice(0, 20), deltas: [] }, 0).ok).toBe(
      false,
    );
    expect(decodeSession('other', { revision: 1, base: text, deltas: [] }, 0).ok).toBe(false);
  });

  it('A5: invalid non-essential fields are reset and reported, the transcript kept', () => {
    const raw = {
      ...session(),
      updatedAt: 'yesterday',
      pending: {
        streamId: 'run-1',
        userMessage: { id: 'u', role: 'user', content: 'q' },
        startedAt: 'bad',
      },
      messages: [
        { id: 'm1', role: 'user', content: 'hi', createdAt: -5, marker: { type: 'nope' } },
      ],
    };
    const decoded = decodeSession(
      'chat',
      { revision: 3, base: JSON.stringify(raw), deltas: [] },
      99,
    );
    expect(decoded.ok).toBe(true);
    if (!decoded.ok) return;
    expect(decoded.session.updatedAt).toBe(0);
    expect(decoded.session.pending?.userMessage.content).toBe('q');
    // F1: an unreadable start is taken as long ago, never as the time of reading (which
    // would keep the turn inside the grace period on every load).
    expect(decoded.session.pending?.startedAt).toBe(1);
    expect(decoded.session.messages[0]?.createdAt).toBe(99);
    expect(decoded.session.messages[0]?.marker).toBeUndefined();
    expect(decoded.problems.map((problem) => problem.field)).toEqual(
      expect.arrayContaining([
        'updatedAt',
        'pending',
        'messages[0].createdAt',
        'messages[0].marker',
      ]),
    );
  });

  it('A4: unknown fields survive a round trip', () => {
    const withExtras = { ...session(), futureField: { nested: [1, 2] } } as Session;
    withExtras.messages = [{ ...withExtras.messages[0]!, providerState: 'opaque' }];
    const decoded = decodeSession(
      'chat',
      { revision: 1, base: encodeFull(withExtras), deltas: [] },
      0,
    );
    expect(decoded.ok && decoded.session.futureField).toEqual({ nested: [1, 2] });
    expect(decoded.ok && decoded.session.messages[0]?.providerState).toBe('opaque');
  });
});
