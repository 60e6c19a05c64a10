/**
 * Issue 35, item 7: the exported codec helpers, `encodeSessionDocument` and
 * `decodeStoredSession` (the CLI, the fs adapter's listing and third-party tools call them),
 * threw TypeErrors and RangeErrors on null, cycles, bigints and deep nesting; and a store
 * loading a stored document nested 6,000 levels deep threw a RangeError. Each test failed on
 * the code before this change.
 */
import { describe, expect, it } from 'vitest';
import {
  CorruptDocumentError,
  createMemoryBackend,
  createSessionStore,
  decodeStoredSession,
  encodeSessionDocument,
  InvalidIdError,
  InvalidInputError,
  type KeepsakeError,
  MAX_SESSION_DEPTH,
  memoryAdapter,
  type Session,
  type StoreEvent,
} from '../../index.js';
import { ManualClock } from '../../time/clock.js';

function session(overrides: Record<string, unknown> = {}): Session {
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
  } as Session;
}

function nested(levels: number): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  let current = root;
  for (let level = 1; level < levels; level++) {
    const child: Record<string, unknown> = {};
    current.a = child;
    current = child;
  }
  return root;
}

/** JSON text nested `levels` deep, as a tool other than Keepsake could have stored it. */
function deepText(levels: number): string {
  return `${'['.repeat(levels)}${']'.repeat(levels)}`;
}

function thrown(call: () => unknown): unknown {
  try {
    call();
  } catch (error) {
    return error;
  }
  throw new Error('expected the call to throw; it returned');
}

function typed<T extends KeepsakeError>(
  guard: { isInstance(error: unknown): error is T },
  call: () => unknown,
): T {
  const error = thrown(call);
  if (!guard.isInstance(error)) throw error;
  return error;
}

describe('A4: encodeSessionDocument answers bad input with a typed error', () => {
  const cycle = (): Record<string, unknown> => {
    const metadata: Record<string, unknown> = {};
    metadata.self = metadata;
    return metadata;
  };
  it.each([
    ['null', null, ''],
    ['a number', 5, ''],
    ['a string', 'chat', ''],
    ['an array', [], ''],
    ['a cycle', session({ metadata: cycle() }), 'metadata.self'],
    ['a bigint', session({ metadata: { n: 10n } }), 'metadata.n'],
    ['6,000 levels', session({ metadata: nested(6_000) }), 'metadata'],
    ['a symbol-keyed field', session({ metadata: { [Symbol('s')]: 1 } }), 'metadata'],
    ['a Date', session({ metadata: { at: new Date(0) } }), 'metadata.at'],
    ['a function in a message', session({ messages: [{ id: 'm', run() {} }] }), 'messages[0].run'],
  ])('A4: %s is refused with InvalidInputError naming its path', (_label, value, path) => {
    const error = typed(InvalidInputError, () => encodeSessionDocument(value as Session));
    expect(error.path?.startsWith(path)).toBe(true);
  });
});

describe('A2: decodeStoredSession answers bad arguments with a typed error and any stored text with a result', () => {
  const stored = { revision: 1, base: encodeSessionDocument(session()), deltas: [] };
  const cycle: Record<string, unknown> = {};
  cycle.self = cycle;

  it.each([null, undefined, 5, 'a/b', '', {}])('A1: expected id %s is InvalidIdError', (id) => {
    typed(InvalidIdError, () => decodeStoredSession(id as string, stored, 1));
  });

  it.each([
    ['null', null, ''],
    ['a string', 'text', ''],
    ['a cycle', cycle, 'base'],
    ['6,000 levels', nested(6_000), 'base'],
    ['a base that is not text', { ...stored, base: 5 }, 'base'],
    ['a base that is a bigint', { ...stored, base: 5n }, 'base'],
    ['deltas that are not a list', { ...stored, deltas: null }, 'deltas'],
    ['a delta that is not text', { ...stored, deltas: [{}] }, 'deltas[0]'],
    ['a revision that is not a count', { ...stored, revision: -1 }, 'revision'],
    ['a revision that is a bigint', { ...stored, revision: 1n }, 'revision'],
  ])('A2: a stored document that is %s is InvalidInputError naming it', (_label, value, path) => {
    const error = typed(InvalidInputError, () =>
      decodeStoredSession('chat', value as typeof stored, 1),
    );
    expect(error.path).toBe(path);
  });

  it.each([Number.NaN, Number.POSITIVE_INFINITY, -1, '1', 1n])(
    'A2: now = %s is InvalidInputError',
    (now) => {
      expect(
        typed(InvalidInputError, () => decodeStoredSession('chat', stored, now as number)).path,
      ).toBe('now');
    },
  );

  it.each([
    ['metadata', `"metadata":{"x":${deepText(6_000)}}`, 'metadata', (s: Session) => s.metadata, {}],
    [
      'a tool call',
      `"toolCalls":[{"id":"t","name":"n","done":true,"args":${deepText(6_000)}}]`,
      'toolCalls',
      (s: Session) => s.toolCalls,
      [],
    ],
    [
      'the pending turn',
      `"pending":{"streamId":"r1","startedAt":1,"attachments":[],"userMessage":{"id":"u","role":"user","content":"q","x":${deepText(6_000)}}}`,
      'pending',
      (s: Session) => s.pending,
      null,
    ],
    [
      'a field of its own',
      `"extra":${deepText(6_000)}`,
      'extra',
      (s: Session) => (s as Record<string, unknown>).extra,
      undefined,
    ],
    [
      'metadata just past the limit',
      `"metadata":{"x":${deepText(MAX_SESSION_DEPTH)}}`,
      'metadata',
      (s: Session) => s.metadata,
      {},
    ],
  ])(
    'A5, A3: %s nested past the depth limit is reset and reported, the transcript kept, and the session encodes again',
    (_label, field, problemField, read, reset) => {
      const base = `{"id":"chat","messages":[{"id":"m1","role":"user","content":"hi","createdAt":1}],${field}}`;
      const decoded = decodeStoredSession('chat', { revision: 3, base, deltas: [] }, 7);
      if (!decoded.ok) throw new Error(decoded.reason);
      expect(decoded.problems.map((problem) => problem.field)).toContain(problemField);
      expect(read(decoded.session)).toEqual(reset);
      expect(decoded.session.messages.map((message) => message.content)).toEqual(['hi']);
      expect(() => encodeSessionDocument(decoded.session)).not.toThrow();
    },
  );

  it('A2, A3: a message nested past the depth limit makes the transcript unreadable', () => {
    const base = `{"id":"chat","messages":[{"id":"m1","role":"user","content":"hi","x":${deepText(6_000)}}]}`;
    const decoded = decodeStoredSession('chat', { revision: 1, base, deltas: [] }, 7);
    expect(decoded.ok).toBe(false);
    expect(!decoded.ok && decoded.reason).toMatch(/messages\[0\].*deeper than 512/);
  });
});

describe('A2, A5: a store loads a stored document nested 6,000 levels deep with a typed answer', () => {
  async function loadStored(base: string) {
    const backend = createMemoryBackend();
    backend.documents.set('sessions/chat', { revision: 1, base, deltas: [] });
    const events: StoreEvent[] = [];
    const store = createSessionStore({
      adapter: memoryAdapter({ backend }),
      clock: new ManualClock(),
    });
    store.on((event) => events.push(event));
    const loaded = await store.load('chat').catch((error: unknown) => error);
    return { store, loaded, events, backend };
  }

  it('A5: deep metadata is reset with a warning; the session saves again', async () => {
    const { store, loaded, events } = await loadStored(
      `{"id":"chat","title":"kept","messages":[{"id":"m1","role":"user","content":"hi","createdAt":1}],"metadata":{"x":${deepText(6_000)}}}`,
    );
    if (!(typeof loaded === 'object' && loaded !== null && 'messages' in loaded)) throw loaded;
    const session = loaded as Session;
    expect([session.title, session.metadata, session.messages.length]).toEqual(['kept', {}, 1]);
    expect(events.map((event) => event.type === 'warning' && event.field)).toContain('metadata');
    session.title = 'saved again';
    expect((await store.save(session)).revision).toBe(2);
    await store.close();
  });

  it('A2: a deep message is CorruptDocumentError, its bytes moved aside intact', async () => {
    const base = `{"id":"chat","messages":[{"id":"m1","role":"user","content":"hi","x":${deepText(6_000)}}]}`;
    const { store, loaded, backend } = await loadStored(base);
    expect(CorruptDocumentError.isInstance(loaded)).toBe(true);
    expect([...backend.quarantinedBytes.values()]).toEqual([base]);
    await store.close();
  });
});
