import { InvalidIdError } from '@keepsake/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { assertDocumentId, decodeName, encodeId } from '../src/id-encoding.js';
import { full, openAdapter } from './helpers.js';

const idCharacter = fc.constantFrom(
  ...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-'.split(''),
);
const sessionId = fc.string({ unit: idCharacter, minLength: 1, maxLength: 128 });

describe('id encoding', () => {
  it('A1: ids that differ only in case never share a file name, even case-insensitively', () => {
    expect(encodeId('Chat-A')).not.toBe(encodeId('chat-a'));
    fc.assert(
      fc.property(sessionId, sessionId, (left, right) => {
        fc.pre(left !== right);
        expect(encodeId(left).toLowerCase()).not.toBe(encodeId(right).toLowerCase());
      }),
    );
  });

  it('A1: every encoded name is lower-case, short enough for any filesystem, and decodes back', () => {
    fc.assert(
      fc.property(sessionId, fc.nat({ max: 2 ** 40 }), (id, revision) => {
        for (const candidate of [id, `${id}.${revision}`]) {
          const name = encodeId(candidate);
          expect(name).toBe(name.toLowerCase());
          expect(name).not.toContain('.');
          expect(Buffer.byteLength(name)).toBeLessThan(255);
          expect(decodeName(name)).toBe(candidate);
        }
      }),
    );
  });

  it('A1: names that are not canonical encodings (temp files, strays) decode to nothing', () => {
    for (const name of [
      'document.123-abcdef012345-1.tmp',
      'chat-a',
      'Chat-a=',
      'chat-a=011',
      'chat-a=zz',
      'ab=100',
      '..=',
      'lock',
    ]) {
      expect(decodeName(name)).toBeNull();
    }
  });

  it('A1: the adapter refuses ids that could escape a path before touching storage', async () => {
    const adapter = await openAdapter();
    for (const id of ['..', 'a/b', 'a\\b', '', 'x'.repeat(129), 'a\u0000b', '*']) {
      await expect(adapter.getDocument('sessions', id)).rejects.toSatisfy(
        InvalidIdError.isInstance,
      );
      await expect(
        adapter.putDocument('sessions', id, full(1, '{}'), {
          expectedRevision: null,
          durable: false,
        }),
      ).rejects.toSatisfy(InvalidIdError.isInstance);
      await expect(
        adapter.appendLog('ok', id, [{ sequence: 1, text: '{}' }], { durability: 'none' }),
      ).rejects.toSatisfy(InvalidIdError.isInstance);
    }
    expect(() => assertDocumentId('revisions', 'abc')).toThrow(InvalidIdError);
    expect(() => assertDocumentId('revisions', 'abc.12')).not.toThrow();
    expect(() => assertDocumentId('sessions', 'abc.12')).toThrow(InvalidIdError);
  });

  it('A1: Chat-A and chat-a are two documents on disk', async () => {
    const adapter = await openAdapter();
    const options = { expectedRevision: null, durable: false };
    await adapter.putDocument('sessions', 'Chat-A', full(1, '"upper"'), options);
    await adapter.putDocument('sessions', 'chat-a', full(1, '"lower"'), options);
    expect((await adapter.getDocument('sessions', 'Chat-A'))?.base).toBe('"upper"');
    expect((await adapter.getDocument('sessions', 'chat-a'))?.base).toBe('"lower"');
    const page = await adapter.listDocuments('sessions', { cursor: null, limit: 10 });
    expect(page.ids).toEqual(['Chat-A', 'chat-a']);
  });
});
