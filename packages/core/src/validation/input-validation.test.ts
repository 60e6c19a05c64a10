/**
 * Issue 14, defect 7: input that used to cost data. Each test names its clause and failed on
 * the code before this change (a TypeError after a write, a silently coerced option, an
 * acknowledged record the reader rejects…).
 */
import { describe, expect, it } from 'vitest';
import type { StorageAdapter } from '../adapter/adapter.js';
import { memoryAdapter } from '../adapter/memory-adapter.js';
import { InvalidConfigError, InvalidInputError } from '../errors/input-errors.js';
import type { KeepsakeError } from '../errors/keepsake-error.js';
import { createSessionStore } from '../store.js';
import type { SessionStore } from '../store-types.js';
import { ManualClock } from '../time/clock.js';
import type { Session } from './schemas.js';

let namespaceCounter = 0;
const namespaces = new WeakMap<SessionStore, string>();

/** A store on a memory namespace of its own; `instrument` may wrap the adapter's methods. */
function openStore(instrument: (adapter: StorageAdapter) => void = () => {}): SessionStore {
  const namespace = `input-validation-${namespaceCounter++}`;
  const adapter = memoryAdapter({ namespace });
  instrument(adapter);
  const store = createSessionStore({ adapter, clock: new ManualClock() });
  namespaces.set(store, namespace);
  return store;
}

/** What is stored for a session, read by an adapter of its own (the store may be closed). */
async function storedState(store: SessionStore, id: string) {
  const reader = memoryAdapter({ namespace: namespaces.get(store) ?? '' });
  await reader.open();
  const stored = await reader.getDocument('sessions', id);
  await reader.close();
  return stored === null
    ? null
    : { revision: stored.revision, texts: [stored.base, ...stored.deltas] };
}

async function invalidInput(promise: Promise<unknown>): Promise<InvalidInputError> {
  const error = await promise.then(
    () => {
      throw new Error('expected an InvalidInputError, the call resolved');
    },
    (caught: unknown) => caught,
  );
  if (!InvalidInputError.isInstance(error)) throw error;
  return error;
}

async function sessionWithHistory(store: SessionStore, id = 's1'): Promise<Session> {
  return store.create({
    id,
    messages: [
      { id: 'q1', role: 'user', content: 'question' },
      { id: 'a1', role: 'assistant', content: 'answer' },
    ],
  });
}

function deeplyNested(levels: number): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  let current = root;
  for (let level = 1; level < levels; level++) {
    current.a = {};
    current = current.a as Record<string, unknown>;
  }
  return root;
}

class Money {
  constructor(readonly cents: number) {}
}

const UNSTORABLE: ReadonlyArray<[string, () => unknown]> = [
  ['a bigint', () => 1n],
  [
    'a cycle',
    () => {
      const cycle: Record<string, unknown> = {};
      cycle.self = cycle;
      return cycle;
    },
  ],
  ['5,000 levels of nesting', () => deeplyNested(5_000)],
  [
    'a throwing getter',
    () => ({
      get broken(): never {
        throw new Error('getter failed');
      },
    }),
  ],
  ['a Date', () => new Date(0)],
  ['a class instance', () => new Money(5)],
  ['a function', () => () => 1],
  ['NaN', () => Number.NaN],
];

describe('A4, C2: a value JSON cannot store as it is', () => {
  it.each(UNSTORABLE)(
    '%s in metadata: save refuses it naming the path, nothing is written, close() finishes and reports',
    async (_label, make) => {
      const store = openStore();
      const session = await sessionWithHistory(store);
      const before = await storedState(store, 's1');
      session.metadata.n = make();
      const error = await invalidInput(store.save(session));
      expect(error.path).toMatch(/^metadata\.n/);
      expect(error.message).toContain('metadata.n');
      expect(await storedState(store, 's1')).toEqual(before);
      // reload works (it failed with the same TypeError before).
      const reloaded = await store.reload('s1');
      reloaded.metadata.n = make();
      const report = await store.close();
      expect(store.closed).toBe(true);
      expect(report.flush.failed.map((failure) => failure.sessionId)).toEqual(['s1']);
      expect(InvalidInputError.isInstance(report.flush.failed[0]?.error)).toBe(true);
      expect(await storedState(store, 's1')).toEqual(before);
    },
  );

  it.each(UNSTORABLE)('%s in a message: save refuses it before writing', async (_label, make) => {
    const store = openStore();
    const session = await sessionWithHistory(store);
    const before = await storedState(store, 's1');
    session.messages.push({ id: 'm3', role: 'user', content: 'x', createdAt: 1, extra: make() });
    const error = await invalidInput(store.save(session));
    expect(error.path).toMatch(/^messages\[2\]\.extra/);
    expect(await storedState(store, 's1')).toEqual(before);
    await store.close();
  });

  it('create() refuses such a value before anything is stored, so a corrected retry succeeds', async () => {
    const store = openStore();
    await sessionWithHistory(store, 'cached');
    const error = await invalidInput(store.create({ id: 'c', metadata: { n: 1n } }));
    expect(error.path).toBe('metadata.n');
    expect(await storedState(store, 'c')).toBeNull();
    await expect(store.create({ id: 'c', metadata: { n: '1' } })).resolves.toMatchObject({
      id: 'c',
    });
    await store.close();
  });

  it('beginRun() refuses attachments JSON cannot store, naming them', async () => {
    const store = openStore();
    await sessionWithHistory(store);
    const before = await storedState(store, 's1');
    const error = await invalidInput(
      store.beginRun('s1', {
        userMessage: { role: 'user', content: 'q' },
        attachments: [{ name: 'a.png', size: 1n as unknown as number }],
      }),
    );
    expect(error.path).toBe('attachments[0].size');
    expect(await storedState(store, 's1')).toEqual(before);
    await store.close();
  });
});

describe('A1, E1: a pending turn a save may write', () => {
  const userMessage = { id: 'u1', role: 'user' as const, content: 'q', createdAt: 1 };
  it.each([
    [
      'attachments that are not a list',
      { streamId: 'r1', userMessage, attachments: 'x', startedAt: 5 },
      'pending.attachments',
    ],
    [
      'startedAt 0',
      { streamId: 'r1', userMessage, attachments: [], startedAt: 0 },
      'pending.startedAt',
    ],
    [
      'a negative startedAt',
      { streamId: 'r1', userMessage, attachments: [], startedAt: -5 },
      'pending.startedAt',
    ],
    [
      'an infinite startedAt',
      { streamId: 'r1', userMessage, attachments: [], startedAt: Number.POSITIVE_INFINITY },
      'pending.startedAt',
    ],
    ['no streamId', { userMessage, attachments: [], startedAt: 5 }, 'pending.streamId'],
    [
      'a streamId that is not an A1 id',
      { streamId: 'a/b', userMessage, attachments: [], startedAt: 5 },
      'pending.streamId',
    ],
  ])(
    'with %s is refused before anything is written, and no call sees an undefined run id',
    async (_label, pending, path) => {
      const readLogRunIds: unknown[] = [];
      // Recording only (no fault): which run ids the store asks the journal for.
      const store = openStore((adapter) => {
        const readLog = adapter.readLog.bind(adapter);
        adapter.readLog = (sessionId, runId, options) => {
          readLogRunIds.push(runId);
          return readLog(sessionId, runId, options);
        };
      });
      const session = await sessionWithHistory(store);
      const before = await storedState(store, 's1');
      const copy = { ...session, pending } as unknown as Session;
      const error = await invalidInput(store.save(copy));
      expect(error.path).toContain(path);
      expect(await storedState(store, 's1')).toEqual(before);
      const loaded = await store.load('s1');
      expect(loaded.pending).toBeNull();
      expect(loaded.title).toBe('');
      expect(readLogRunIds).not.toContain(undefined);
      const report = await store.close();
      expect(report.flush.failed).toEqual([]);
    },
  );
});

describe('B5: message ids are unique in a session', () => {
  it('create() refuses two messages with one id', async () => {
    const store = openStore();
    const error = await invalidInput(
      store.create({
        id: 'd',
        messages: [
          { id: 'a', role: 'user', content: 'x' },
          { id: 'a', role: 'user', content: 'y' },
        ],
      }),
    );
    expect(error.path).toBe('messages[1].id');
    expect(await storedState(store, 'd')).toBeNull();
    await store.close();
  });

  it('save() refuses a new message reusing a stored id, so removing one copy can never pass the shrink guard', async () => {
    const store = openStore();
    const session = await sessionWithHistory(store);
    const before = await storedState(store, 's1');
    session.messages.push({ id: 'q1', role: 'user', content: 'again', createdAt: 1 });
    const error = await invalidInput(store.save(session));
    expect(error.message).toContain('"q1"');
    expect(await storedState(store, 's1')).toEqual(before);
    session.messages.pop();
    // Messages without ids get fresh ones: never a duplicate.
    session.messages.push({ role: 'user', content: 'fresh' } as Session['messages'][number]);
    await expect(store.save(session)).resolves.toMatchObject({ revision: 2 });
    await store.close();
  });

  it('save() refuses a reused id after many appends, after a refused save and after a failed write (B5)', async () => {
    let failNextWrite = false;
    // Fault injection (a mock by design): the next putDocument rejects before it writes.
    const store = openStore((adapter) => {
      const putDocument = adapter.putDocument.bind(adapter);
      adapter.putDocument = (...args) => {
        if (!failNextWrite) return putDocument(...args);
        failNextWrite = false;
        return Promise.reject(new Error('injected write failure'));
      };
    });
    const session = await store.create({ id: 's1' });
    // Several appends: the id record of each save is carried to the next without a walk.
    for (let index = 0; index < 6; index++) {
      session.messages.push({ id: `m${index}`, role: 'user', content: `${index}`, createdAt: 1 });
      await store.save(session);
    }
    for (const reused of ['m0', 'm3', 'm5']) {
      session.messages.push({ id: reused, role: 'user', content: 'again', createdAt: 1 });
      const error = await invalidInput(store.save(session));
      expect(error.message).toContain(`"${reused}"`);
      session.messages.pop();
    }
    // A refused save in between (a duplicate among the new ones) leaves a record of messages
    // that were never stored: it must not be believed.
    session.messages.push(
      { id: 'n1', role: 'user', content: 'a', createdAt: 1 },
      { id: 'n1', role: 'user', content: 'b', createdAt: 1 },
    );
    await invalidInput(store.save(session));
    session.messages.splice(-2, 2, { id: 'n2', role: 'user', content: 'c', createdAt: 1 });
    await expect(store.save(session)).resolves.toMatchObject({ revision: 8 });
    session.messages.push({ id: 'm4', role: 'user', content: 'again', createdAt: 1 });
    expect((await invalidInput(store.save(session))).message).toContain('"m4"');
    session.messages.pop();
    session.messages.push({ id: 'n2', role: 'user', content: 'again', createdAt: 1 });
    expect((await invalidInput(store.save(session))).message).toContain('"n2"');
    session.messages.pop();
    // A write that failed leaves a record of a transcript that was never stored.
    session.messages.push({ id: 'f1', role: 'user', content: 'lost?', createdAt: 1 });
    failNextWrite = true;
    await expect(store.save(session)).rejects.toThrow('injected write failure');
    await expect(store.save(session)).resolves.toMatchObject({ revision: 9 });
    session.messages.push({ id: 'f1', role: 'user', content: 'again', createdAt: 1 });
    expect((await invalidInput(store.save(session))).message).toContain('"f1"');
    session.messages.pop();
    session.messages.push({ id: 'm2', role: 'user', content: 'again', createdAt: 1 });
    expect((await invalidInput(store.save(session))).message).toContain('"m2"');
    await store.close();
  });
});

describe('E2: an event a reader could not read back is never acknowledged', () => {
  it.each([
    ['a Date', new Date(0)],
    ['a boxed String', Object('text')],
    ['an object whose toJSON returns a string', { toJSON: () => 'text' }],
    ['an object whose toJSON returns an array', { toJSON: () => [1] }],
  ])(
    'append refuses data that is %s, and a later token still reaches the stored answer',
    async (_label, data) => {
      const store = openStore();
      await store.create({ id: 's1' });
      const run = await store.beginRun('s1', { userMessage: { role: 'user', content: 'q' } });
      await run.append({ type: 'token', data: { text: 'Hello' } });
      await invalidInput(run.append({ type: 'token', data: data as Record<string, unknown> }));
      await run.append({ type: 'token', data: { text: ', world' } });
      const journal = await store.readJournal('s1', run.runId);
      expect(journal.invalidRecord).toBeNull();
      expect(journal.records).toHaveLength(2);
      const session = await run.complete();
      expect(session.messages.map((message) => message.content)).toEqual(['q', 'Hello, world']);
      await store.close();
    },
  );

  it('append refuses a reused eventId, and every stored message keeps its own id', async () => {
    const store = openStore();
    await store.create({ id: 's1' });
    const run = await store.beginRun('s1', { userMessage: { role: 'user', content: 'q' } });
    await run.append({ type: 'token', eventId: 'e1', data: { text: 'a' } });
    await run.append({ type: 'tool', eventId: 't1', data: { name: 'lookup' } });
    const error = await invalidInput(
      run.append({ type: 'token', eventId: 'e1', data: { text: 'b' } }),
    );
    expect(error.path).toBe('eventId');
    // An append refused as invalid leaves its id free.
    await invalidInput(run.append({ type: 'token', eventId: 'e2', data: new Date(0) as never }));
    await run.append({ type: 'token', eventId: 'e2', data: { text: 'b' } });
    const session = await run.complete();
    const ids = session.messages.map((message) => message.id);
    expect(new Set(ids).size).toBe(ids.length);
    await store.close();
  });

  it('append refuses an unknown event field instead of dropping what it carries', async () => {
    const store = openStore();
    await store.create({ id: 's1' });
    const run = await store.beginRun('s1', { userMessage: { role: 'user', content: 'q' } });
    const error = await invalidInput(run.append({ type: 'token', text: 'lost' } as never));
    expect(error.path).toBe('text');
    await store.close();
  });
});

describe('B4: a frozen session', () => {
  it.each([
    ['the session', (session: Session) => Object.freeze({ ...session, title: 'frozen' })],
    [
      'its messages',
      (session: Session) => ({
        ...session,
        title: 'frozen',
        messages: Object.freeze([...session.messages]),
      }),
    ],
  ])(
    '(%s) is refused before anything is written, and a mutable copy then saves without a conflict',
    async (_label, freeze) => {
      const store = openStore();
      const session = await sessionWithHistory(store);
      const before = await storedState(store, 's1');
      const error = await invalidInput(store.save(freeze(session) as Session));
      expect(error.message).toMatch(/frozen/);
      expect(await storedState(store, 's1')).toEqual(before);
      const saved = await store.save({
        ...session,
        title: 'copy',
        messages: [...session.messages],
      });
      expect(saved.revision).toBe(2);
      const report = await store.close();
      expect(report.flush.failed).toEqual([]);
      expect((await storedState(store, 's1'))?.revision).toBe(2);
    },
  );
});

describe('options are validated strictly where they enter', () => {
  it.each([
    [
      'save fsync: "true"',
      (store: SessionStore, session: Session) => store.save(session, { fsync: 'true' } as never),
      'fsync',
    ],
    [
      'save unknown key',
      (store: SessionStore, session: Session) => store.save(session, { fsnyc: true } as never),
      'fsnyc',
    ],
    [
      'save the internal rewriteRevision',
      (store: SessionStore, session: Session) =>
        store.save(session, { rewriteRevision: true } as never),
      'rewriteRevision',
    ],
    [
      'create allowShrink: 1',
      (store: SessionStore) => store.create({ id: 'n' }, { allowShrink: 1 } as never),
      'allowShrink',
    ],
    [
      'load summary (a typo)',
      (store: SessionStore) => store.load('s1', { summary: true } as never),
      'summary',
    ],
    [
      'load refresh: "yes"',
      (store: SessionStore) => store.load('s1', { refresh: 'yes' } as never),
      'refresh',
    ],
    ['list limit: "5"', (store: SessionStore) => store.list({ limit: '5' } as never), 'limit'],
    [
      'list unknown key',
      (store: SessionStore) => store.list({ rotated: true } as never),
      'rotated',
    ],
    [
      'readJournal after (a typo)',
      (store: SessionStore) => store.readJournal('s1', 'r1', { after: 2 } as never),
      'after',
    ],
    [
      'beginRun unknown key',
      (store: SessionStore) =>
        store.beginRun('s1', {
          userMessage: { role: 'user', content: 'q' },
          attachment: [],
        } as never),
      'attachment',
    ],
  ])('%s is refused naming the option, and nothing is written', async (_label, call, path) => {
    const store = openStore();
    const session = await sessionWithHistory(store);
    const before = await storedState(store, 's1');
    const error = await invalidInput(call(store, session) as Promise<unknown>);
    expect(error.path).toBe(path);
    expect(error.message).toContain(`\`${path}\``);
    expect(await storedState(store, 's1')).toEqual(before);
    expect(await storedState(store, 'n')).toBeNull();
    await store.close();
  });

  it('complete() and fail() refuse unknown fields before the run changes, and fail() takes an Error', async () => {
    const store = openStore();
    await store.create({ id: 's1' });
    const run = await store.beginRun('s1', { userMessage: { role: 'user', content: 'q' } });
    await invalidInput(run.complete({ assistantMessage: [] } as never));
    await invalidInput(run.fail({ message: 'x', details: 1 } as never));
    await invalidInput(run.fail({ message: 5 } as never));
    expect(run.active).toBe(true);
    const systemError = Object.assign(new Error('disk gone'), { code: 'EIO', syscall: 'write' });
    await expect(run.fail(systemError)).resolves.toMatchObject({ cancelled: true });
    await store.close();
  });

  it('createSessionStore refuses an unknown top-level option and a clock that is not one', () => {
    const attempt = (options: object) => {
      try {
        createSessionStore({ adapter: memoryAdapter(), ...options });
      } catch (error) {
        return error;
      }
      return null;
    };
    const unknown = attempt({ cahce: { maxSessions: 2 } });
    expect(InvalidConfigError.isInstance(unknown)).toBe(true);
    expect((unknown as KeepsakeError).message).toContain('`cahce`');
    const nested = attempt({ cache: { maxSession: 2 } });
    expect((nested as KeepsakeError).message).toContain('`cache.maxSession`');
    expect(InvalidConfigError.isInstance(attempt({ clock: 'now' }))).toBe(true);
  });
});

describe('B5: the ids a save checks against are those of the stored transcript, exactly', () => {
  const message = (id: string) => ({ id, role: 'user' as const, content: id, createdAt: 1 });

  it('after many appends, an early id is still refused (the kept ids cover every message)', async () => {
    const store = openStore();
    const session = await store.create({ id: 's1' });
    for (let index = 0; index < 20; index++) {
      session.messages.push(message(`m${index}`));
      await store.save(session);
    }
    session.messages.push(message('m3'));
    await invalidInput(store.save(session));
    session.messages.pop();
    session.messages.push(message('m20'));
    await expect(store.save(session)).resolves.toMatchObject({ revision: 22 });
    await store.close();
  });

  it('a save that failed does not make its new ids count as stored: the retry succeeds', async () => {
    let failNext = false;
    // Fault injection: the next document write fails with an I/O error.
    const store = openStore((adapter) => {
      const putDocument = adapter.putDocument.bind(adapter);
      adapter.putDocument = (...args) => {
        if (failNext) {
          failNext = false;
          return Promise.reject(Object.assign(new Error('EIO'), { code: 'EIO' }));
        }
        return putDocument(...args);
      };
    });
    const session = await store.create({ id: 's1', messages: [message('a')] });
    session.messages.push(message('b'));
    await store.save(session);
    session.messages.push(message('c'));
    failNext = true;
    await expect(store.save(session)).rejects.toThrow();
    await expect(store.save(session)).resolves.toMatchObject({ revision: 3 });
    session.messages.push(message('c'));
    await invalidInput(store.save(session));
    await store.close();
  });

  it('after a message is replaced, its old id is free and its new one taken', async () => {
    const store = openStore();
    const session = await store.create({
      id: 's1',
      messages: [message('a'), message('b'), message('c')],
    });
    session.messages[1] = message('b2');
    await store.save(session, { allowShrink: true });
    session.messages.push(message('b'));
    await expect(store.save(session)).resolves.toMatchObject({ revision: 3 });
    session.messages.push(message('b2'));
    await invalidInput(store.save(session));
    await store.close();
  });

  it('a renamed session shares its messages with its parent, yet each is checked against its own', async () => {
    const store = openStore();
    const parent = await store.create({ id: 'old', messages: [message('a'), message('b')] });
    const child = await store.rename('old', 'new');
    parent.messages.push(message('p'));
    await store.save(parent);
    child.messages.push(message('p'));
    await expect(store.save(child)).resolves.toMatchObject({ id: 'new' });
    child.messages.push(message('a'));
    await invalidInput(store.save(child));
    await store.close();
  });
});
