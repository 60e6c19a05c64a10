import { InvalidIdError, InvalidInputError } from '@keepsake/core';
import { describe, expect, it } from 'vitest';
import { KeyLayout } from '../src/index.js';

/** H2: the hash tag of every key of one session is the session id (A1: ids checked again). */
function hashTag(key: string): string {
  const open = key.indexOf('{');
  return key.slice(open + 1, key.indexOf('}', open));
}

describe('key layout', () => {
  const keys = new KeyLayout('app:alice');

  it('H2: every key of a session carries the session id as its hash tag', () => {
    const sessionKeys = [
      keys.document('sessions', 'Chat-1').document,
      keys.document('lifecycle', 'Chat-1').document,
      keys.document('revisions', 'Chat-1.12').document,
      keys.journal('Chat-1', 'run_7'),
      keys.journals('Chat-1'),
      keys.quarantined('sessions', 'Chat-1', 'x'),
    ];
    expect(sessionKeys.map(hashTag)).toEqual(Array(sessionKeys.length).fill('Chat-1'));
    expect(sessionKeys.every((key) => key.startsWith('app:alice:{Chat-1}:'))).toBe(true);
    // A1: case is kept, so Chat-1 and chat-1 are two sessions.
    expect(keys.document('sessions', 'chat-1').document).not.toBe(sessionKeys[0]);
  });

  it("keeps the namespace's own keys under one tag no session id can equal", () => {
    const shared = [
      keys.index(),
      keys.registry('sessions'),
      keys.quarantineList(),
      keys.indexBuild('t'),
    ];
    expect(new Set(shared.map(hashTag))).toEqual(new Set(['app:alice:ns']));
  });

  it('A1: refuses ids that could change a key name', () => {
    for (const id of ['a}b', '{x}', 'a:b', 'a*', '', 'x'.repeat(129)]) {
      expect(() => keys.document('sessions', id), id).toThrow(InvalidIdError);
    }
    expect(() => keys.document('revisions', 'abc')).toThrow(InvalidIdError);
    expect(() => keys.journal('ok', 'bad run')).toThrow(InvalidIdError);
  });

  it('H2: every document of one LangGraph thread carries the thread as its hash tag', () => {
    const threadKeys = [
      keys.document('checkpoints', 'thread-1.ns.cp-1').document,
      keys.document('checkpoints', 'thread-1').document,
      keys.document('checkpoint-writes', 'thread-1.ns.cp-1.task.0').document,
      keys.quarantined('checkpoint-writes', 'thread-1.ns.cp-1.task.0', 'x'),
    ];
    expect(threadKeys.map(hashTag)).toEqual(Array(threadKeys.length).fill('thread-1'));
    expect(hashTag(keys.document('runs', 'run_7').document)).toBe('run_7');
  });

  it('keeps each collection apart: one id in every collection is as many keys', () => {
    const id = 'same-id';
    const documents = (
      ['sessions', 'lifecycle', 'runs', 'checkpoints', 'checkpoint-writes'] as const
    ).map((collection) => keys.document(collection, id).document);
    expect(new Set(documents).size).toBe(documents.length);
    expect(() => keys.document('nope' as never, id)).toThrow(InvalidInputError);
    expect(() => keys.registry('nope' as never)).toThrow(InvalidInputError);
  });

  it('A1: refuses checkpoint ids of the wrong shape', () => {
    for (const id of ['a..b', '.a', 'a.', 'a}b.c', 'a.b.c.d.e.f', 'x'.repeat(161)]) {
      expect(() => keys.document('checkpoints', id), id).toThrow(InvalidIdError);
    }
    expect(() => keys.document('runs', 'a.b')).toThrow(InvalidIdError);
  });

  it('reads back only its own quarantine keys', () => {
    expect(keys.isQuarantineKey(keys.quarantined('revisions', 's.3', 'u'))).toBe(true);
    expect(keys.isQuarantineKey('app:alice:{s}:session')).toBe(false);
    expect(keys.isQuarantineKey('other:{s}:quarantine:sessions:s:u')).toBe(false);
  });
});
