import { describe, expect, it } from 'vitest';
import type { Session } from '../../validation/schemas.js';
import { headOf } from './document-codec.js';
import { headText } from './head-text.js';

function session(overrides: Partial<Session> = {}): Session {
  return {
    id: 'chat',
    title: 'Ünïcode "quoted" \\ title\n',
    createdAt: 1_795_791_337_126,
    updatedAt: 1_795_791_337_200,
    revision: 3,
    messages: [{ id: 'm1', role: 'user', content: 'hi', createdAt: 1 }],
    pending: null,
    toolCalls: [],
    parentId: null,
    rotatedTo: null,
    metadata: { tags: ['a', 'b'], nested: { n: 1.5 } },
    ...overrides,
  };
}

/** What every head text was before headText: the head copied, stringified. */
function stringified(value: Session, revision = value.revision, updatedAt = value.updatedAt) {
  return JSON.stringify({ ...headOf(value), revision, updatedAt });
}

describe('headText (B1: a delta carries the head; C1: isDirty compares head texts)', () => {
  it('writes a plain head as JSON.stringify writes it, with the revision and time given', () => {
    const plain = session({ parentId: 'parent-1', rotatedTo: 'next_2' });
    expect(headText(plain)).toBe(stringified(plain));
    expect(headText(plain, 9, 1_795_791_400_000)).toBe(stringified(plain, 9, 1_795_791_400_000));
    expect(JSON.parse(headText(plain, 9, 5))).toEqual({
      ...headOf(plain),
      revision: 9,
      updatedAt: 5,
    });
  });

  it('keeps every other head whole, in the session’s own key order', () => {
    const withExtra = { ...session(), extra: { kept: true } } as Session;
    const pending = session({
      pending: { streamId: 'run-1', startedAt: 4 } as unknown as Session['pending'],
    });
    const toolCalls = session({ toolCalls: [{ id: 't1' }] as unknown as Session['toolCalls'] });
    const { metadata, ...rest } = session();
    const reordered = { metadata, ...rest } as Session;
    for (const head of [withExtra, pending, toolCalls]) {
      expect(headText(head)).toBe(stringified(head));
      expect(JSON.parse(headText(head, 7, 8))).toEqual({
        ...headOf(head),
        revision: 7,
        updatedAt: 8,
      });
    }
    expect(JSON.parse(headText(withExtra)).extra).toEqual({ kept: true });
    // The same head in another key order reads back the same (its text may differ).
    expect(JSON.parse(headText(reordered))).toEqual(JSON.parse(headText(session())));
  });

  it('never prints a number JSON cannot hold', () => {
    const broken = session({ createdAt: Number.NaN });
    expect(headText(broken)).toBe(stringified(broken));
    expect(JSON.parse(headText(broken)).createdAt).toBeNull();
  });
});
