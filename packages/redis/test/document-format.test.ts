import { describe, expect, it } from 'vitest';
import { encodeRecord, parseDocument, TRAILER_BYTES } from '../src/document-format.js';

/** B1: a stored document is one string: records, each with a fixed trailer (revision, token). */
describe('document format', () => {
  it('reads back the base and the deltas appended since, whatever their characters', () => {
    const value = Buffer.from(
      encodeRecord('full', 3, '{"text":"ünïcødé 🎉\\n"}', 'tok.1') +
        encodeRecord('delta', 4, '{"d":1}', 'tok.2') +
        encodeRecord('delta', 5, 'line one\nline two', 'tok.3'),
    );
    expect(parseDocument(value)).toEqual({
      revision: 5,
      base: '{"text":"ünïcødé 🎉\\n"}',
      deltas: ['{"d":1}', 'line one\nline two'],
    });
    expect(Buffer.byteLength(encodeRecord('full', 1, '', 't'))).toBe(TRAILER_BYTES);
  });

  it('a full write drops the deltas before it: only the last base and what follows count', () => {
    const value = Buffer.from(
      encodeRecord('full', 1, 'old', 'a') +
        encodeRecord('delta', 2, 'd', 'b') +
        encodeRecord('full', 3, 'new', 'c'),
    );
    // Never stored like this (a full write is a SET), but parsing stops at the last base.
    expect(parseDocument(value)).toBeNull();
    expect(parseDocument(Buffer.from(encodeRecord('full', 3, 'new', 'c')))).toEqual({
      revision: 3,
      base: 'new',
      deltas: [],
    });
  });

  it('returns null for bytes in no known format (core quarantines them)', () => {
    expect(parseDocument(Buffer.from('{"plain":"json"}'))).toBeNull();
    expect(parseDocument(Buffer.from(encodeRecord('delta', 2, 'orphan delta', 'x')))).toBeNull();
    const torn = Buffer.from(encodeRecord('full', 1, 'base', 'x'));
    expect(parseDocument(torn.subarray(1))).toBeNull();
  });
});
