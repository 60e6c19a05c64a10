import { describe, expect, it } from 'vitest';
import { memoryAdapter } from '../adapter/memory-adapter.js';
import { LimitExceededError } from '../errors/input-errors.js';
import { JournalSealedError, RunNotActiveError } from '../errors/run-errors.js';
import { BackendError } from '../errors/storage-errors.js';
import { ManualClock } from '../time/clock.js';
import type { JournalRecord } from '../validation/schemas.js';
import { readJournal } from './journal-read.js';
import { recordText } from './journal-record.js';
import { JournalWriter } from './journal-writer.js';
import { nextTerminalState, terminalStateOf } from './terminal-state.js';

/** A memory adapter holding the writers' session: a run's first append checks it (B8). */
async function adapterWithSession() {
  const adapter = memoryAdapter();
  await adapter.open();
  await adapter.putDocument(
    'sessions',
    'session-1',
    { kind: 'full', revision: 1, text: '{}' },
    { expectedRevision: null, durable: false },
  );
  return adapter;
}

function writer(adapter: ReturnType<typeof memoryAdapter>, runId = 'run-1') {
  return new JournalWriter({
    adapter,
    clock: new ManualClock(),
    sessionId: 'session-1',
    runId,
    policy: 'group',
    maxEventBytes: 1024,
  });
}

describe('journal', () => {
  it('E2: the hand-spliced record text is the JSON of the record, escapes in the data kept', () => {
    const record: JournalRecord = {
      sessionId: 's-1',
      runId: 'r_2',
      sequence: 7,
      eventId: 'e-3',
      type: 'token',
      data: { text: 'a "quoted" \\ line\n\u2028 and ünïcode' },
      at: 1_790_000_000_123,
    };
    const text = recordText(record, JSON.stringify(record.data));
    expect(JSON.parse(text)).toEqual(record);
    // A clock that returns a non-finite time still yields parseable JSON (as null).
    const odd = recordText({ ...record, at: Number.NaN }, '{}');
    expect(JSON.parse(odd).at).toBeNull();
  });

  it('E2: the record an append returns holds the data as stored, not the caller object', async () => {
    const adapter = await adapterWithSession();
    const journal = writer(adapter);
    const caller = { at: new Date(0), skipped: undefined, nested: { list: [1, 'two'] } };
    const record = await journal.append({ type: 'tool', data: caller });
    const stored = { at: '1970-01-01T00:00:00.000Z', nested: { list: [1, 'two'] } };
    expect(record.data).toEqual(stored);
    expect(record.data).not.toBe(caller);
    expect(record.data).toBe(record.data);
    // Read back, serialized and copied, it is the same record.
    const read = await readJournal(adapter, record.sessionId, record.runId);
    expect(read.records).toEqual([record]);
    expect(JSON.parse(JSON.stringify(record))).toEqual(read.records[0]);
    expect({ ...record }.data).toEqual(stored);
    // A plain object, its keys in the order of a record read back, nothing else enumerable.
    expect(Object.getPrototypeOf(record)).toBe(Object.prototype);
    expect(Object.keys(record)).toEqual(Object.keys(read.records[0] as JournalRecord));
    const enumerableSymbols = Object.getOwnPropertySymbols(record).filter(
      (symbol) => Object.getOwnPropertyDescriptor(record, symbol)?.enumerable,
    );
    expect(enumerableSymbols).toEqual([]);
    expect(Object.getOwnPropertySymbols({ ...record })).toEqual([]);
    expect(structuredClone(record)).toEqual(read.records[0]);
    // Read through a Proxy (a Vue `reactive`), an heir or a copy of its descriptors.
    expect(new Proxy(record, {}).data).toEqual(stored);
    // A trap that wraps every object it returns, as Vue's `reactive` does.
    const wrapping: ProxyHandler<object> = {
      get(target, key, receiver) {
        const value: unknown = Reflect.get(target, key, receiver);
        return typeof value === 'object' && value !== null ? new Proxy(value, wrapping) : value;
      },
    };
    expect((new Proxy(record, wrapping) as JournalRecord).data).toEqual(stored);
    expect((Object.create(record) as JournalRecord).data).toEqual(stored);
    const copied = Object.defineProperties({}, Object.getOwnPropertyDescriptors(record));
    expect((copied as JournalRecord).data).toEqual(stored);
    // A deep freeze (one that walks every own key, symbols too) leaves it readable.
    const frozen = await journal.append({ type: 'tool', data: caller });
    const deepFreeze = (value: object): void => {
      for (const key of Reflect.ownKeys(value)) {
        const inner = Object.getOwnPropertyDescriptor(value, key)?.value;
        if (typeof inner === 'object' && inner !== null) deepFreeze(inner);
      }
      Object.freeze(value);
    };
    deepFreeze(frozen);
    expect(frozen.data).toEqual(stored);
    // A caller may replace it, as on any plain record.
    record.data = { replaced: true };
    expect(record.data).toEqual({ replaced: true });
  });

  it('E2: sequences are 1, 2, 3… without gaps, also for concurrent appends', async () => {
    const adapter = await adapterWithSession();
    const journal = writer(adapter);
    const records = await Promise.all(
      Array.from({ length: 20 }, (_, index) =>
        journal.append({ type: 'token', data: { text: `${index}` } }),
      ),
    );
    expect(records.map((record) => record.sequence)).toEqual(
      Array.from({ length: 20 }, (_, index) => index + 1),
    );
    const read = await readJournal(adapter, 'session-1', 'run-1');
    expect(read.records.map((record) => record.data.text)).toEqual(
      records.map((record) => record.data.text),
    );
    expect(read.gap).toBeNull();
  });

  it('E2: two writers on one journal never take the same sequence', async () => {
    const adapter = await adapterWithSession();
    const first = writer(adapter);
    const second = writer(adapter);
    await first.append({ type: 'token', data: { text: 'a' } });
    await second.append({ type: 'token', data: { text: 'b' } });
    await first.append({ type: 'token', data: { text: 'c' } });
    const read = await readJournal(adapter, 'session-1', 'run-1');
    expect(read.records.map((record) => [record.sequence, record.data.text])).toEqual([
      [1, 'a'],
      [2, 'b'],
      [3, 'c'],
    ]);
  });

  it('E2: terminal precedence — done supersedes error, stream_end changes nothing, final states stay', () => {
    expect(nextTerminalState('errored', 'done')).toBe('completed');
    expect(nextTerminalState('errored', 'error')).toBe('errored');
    expect(nextTerminalState('completed', 'error')).toBe('completed');
    expect(nextTerminalState('completed', 'stream_end')).toBe('completed');
    expect(nextTerminalState(null, 'stream_end')).toBeNull();
    expect(nextTerminalState('interrupted-by-crash', 'done')).toBe('completed');
    const records = ['token', 'error', 'stream_end', 'done'].map(
      (type, index) => ({ type, sequence: index + 1 }) as unknown as JournalRecord,
    );
    expect(terminalStateOf(records)).toBe('completed');
  });

  it('E2: a sealed journal refuses further events but a stream_end', async () => {
    const journal = writer(await adapterWithSession());
    await journal.append({ type: 'done' });
    await expect(journal.append({ type: 'token', data: { text: 'late' } })).rejects.toSatisfy(
      JournalSealedError.isInstance,
    );
    await expect(journal.append({ type: 'stream_end' })).resolves.toMatchObject({ sequence: 2 });
  });

  it('A3: an oversized event is refused and nothing is written', async () => {
    const adapter = await adapterWithSession();
    const journal = writer(adapter);
    await expect(
      journal.append({ type: 'token', data: { text: 'x'.repeat(2000) } }),
    ).rejects.toSatisfy(LimitExceededError.isInstance);
    expect((await readJournal(adapter, 'session-1', 'run-1')).exists).toBe(false);
  });

  it('E2: a stored record whose identity does not match its journal is rejected on read', async () => {
    const adapter = await adapterWithSession();
    await writer(adapter).append({ type: 'token', data: { text: 'ok' } });
    const foreign = {
      sessionId: 'other',
      runId: 'run-1',
      sequence: 2,
      eventId: 'e2',
      type: 'token',
      data: {},
      at: 1,
    };
    await adapter.appendLog(
      'session-1',
      'run-1',
      [{ sequence: 2, text: JSON.stringify(foreign) }],
      {
        durability: 'none',
      },
    );
    const read = await readJournal(adapter, 'session-1', 'run-1');
    expect(read.records).toHaveLength(1);
    expect(read.invalidRecord).toEqual({ sequence: 2 });
  });

  it('B8: a first append whose session is gone is refused, its journal removed', async () => {
    const adapter = memoryAdapter();
    await adapter.open();
    const journal = writer(adapter);
    await expect(journal.append({ type: 'token', data: { text: 'a' } })).rejects.toSatisfy(
      RunNotActiveError.isInstance,
    );
    expect((await readJournal(adapter, 'session-1', 'run-1')).exists).toBe(false);
    await expect(journal.append({ type: 'token', data: { text: 'b' } })).rejects.toSatisfy(
      RunNotActiveError.isInstance,
    );
    expect(await adapter.listLogs('session-1')).toEqual([]);
  });

  it('B8: a session check that fails leaves the first append standing (fault injection)', async () => {
    const adapter = await adapterWithSession();
    const failing = Object.assign(Object.create(adapter) as typeof adapter, {
      hasDocument: () => Promise.reject(new Error('injected: check failed')),
    });
    const journal = writer(failing);
    await expect(journal.append({ type: 'token', data: { text: 'a' } })).resolves.toMatchObject({
      sequence: 1,
    });
    await expect(journal.append({ type: 'token', data: { text: 'b' } })).resolves.toMatchObject({
      sequence: 2,
    });
  });

  it('B8: a journal that cannot be removed fails the append typed, later appends refused (fault injection)', async () => {
    const adapter = memoryAdapter();
    await adapter.open();
    const failing = Object.assign(Object.create(adapter) as typeof adapter, {
      deleteLog: () => Promise.reject(new Error('injected: unlink failed')),
    });
    const journal = writer(failing);
    await expect(journal.append({ type: 'token', data: { text: 'a' } })).rejects.toSatisfy(
      BackendError.isInstance,
    );
    await expect(journal.append({ type: 'token', data: { text: 'b' } })).rejects.toSatisfy(
      RunNotActiveError.isInstance,
    );
  });

  it('E2: a queued append that fails holds up nothing: the next ones go on in order (fault injection)', async () => {
    const adapter = await adapterWithSession();
    let failNext = false;
    const failing = Object.assign(Object.create(adapter) as typeof adapter, {
      appendLog: (...args: Parameters<typeof adapter.appendLog>) => {
        if (!failNext) return adapter.appendLog(...args);
        failNext = false;
        return Promise.reject(new Error('injected: write failed'));
      },
    });
    const journal = writer(failing);
    await journal.append({ type: 'token', data: { text: 'first' } });
    failNext = true;
    const appends = ['a', 'b', 'c'].map((text) =>
      journal.append({ type: 'token', data: { text } }),
    );
    const settled = await Promise.allSettled(appends);
    expect(settled.map((result) => result.status)).toEqual(['rejected', 'fulfilled', 'fulfilled']);
    expect(BackendError.isInstance((settled[0] as PromiseRejectedResult).reason)).toBe(true);
    expect(
      settled
        .slice(1)
        .map((result) => (result as PromiseFulfilledResult<JournalRecord>).value.sequence),
    ).toEqual([2, 3]);
    await journal.idle();
    const read = await readJournal(adapter, 'session-1', 'run-1');
    expect(read.records.map((record) => record.data)).toEqual([
      { text: 'first' },
      { text: 'b' },
      { text: 'c' },
    ]);
  });
});
