/**
 * Issue 35, item 7: the memory lifecycle's arguments. A fuzzer found calls that threw an
 * untyped TypeError (`drain({ agents: {} })`, `markTurnCompleted(id, null)`, `commit(id,
 * null)`, an agent whose `close` is not a function at `evict`) and falsy ids that are not
 * strings (0, NaN, false) taken as "no id". Each test failed on the code before this change.
 */
import { describe, expect, it } from 'vitest';
import { memoryAdapter } from '../adapter/memory-adapter.js';
import { InvalidIdError, InvalidInputError } from '../errors/input-errors.js';
import type { KeepsakeError } from '../errors/keepsake-error.js';
import { createSessionStore } from '../store.js';
import type { SessionStore } from '../store-types.js';
import { ManualClock } from '../time/clock.js';
import type { MemoryAgent, MemoryLifecycle } from './memory-types.js';

let namespaceCounter = 0;

/** The adapter's methods, its class's included. */
function methodNames(adapter: object): string[] {
  const names = new Set<string>();
  for (
    let level: object | null = adapter;
    level !== null && level !== Object.prototype;
    level = Object.getPrototypeOf(level)
  ) {
    for (const name of Object.getOwnPropertyNames(level))
      if (name !== 'constructor') names.add(name);
  }
  return [...names];
}

interface Opened {
  store: SessionStore;
  lifecycle: MemoryLifecycle;
  /** The adapter methods called, in order. */
  calls: string[];
  commits: string[];
}

async function openStore(): Promise<Opened> {
  const adapter = memoryAdapter({ namespace: `lifecycle-input-${namespaceCounter++}` });
  const calls: string[] = [];
  const record = adapter as unknown as Record<string, unknown>;
  for (const method of methodNames(adapter)) {
    const value = record[method];
    if (typeof value !== 'function') continue;
    record[method] = (...args: unknown[]) => {
      calls.push(method);
      return (value as (...args: unknown[]) => unknown).apply(adapter, args);
    };
  }
  const store = createSessionStore({ adapter, clock: new ManualClock() });
  await store.create({ id: 's1' });
  calls.length = 0;
  return { store, lifecycle: store.lifecycle, calls, commits: [] };
}

function agentOf(opened: Opened): MemoryAgent {
  return {
    commitMemory: async ({ sessionId }) => {
      opened.commits.push(sessionId);
    },
  };
}

async function rejection(call: () => unknown): Promise<unknown> {
  try {
    await call();
  } catch (error) {
    return error;
  }
  throw new Error('expected the call to be refused; it succeeded');
}

async function refusedWith<T extends KeepsakeError>(
  guard: { isInstance(error: unknown): error is T },
  call: () => unknown,
): Promise<T> {
  const error = await rejection(call);
  if (!guard.isInstance(error)) throw error;
  return error;
}

const NOT_IDS: ReadonlyArray<unknown> = [0, Number.NaN, false, -1, 1n, {}, [], 'a/b', '..', ' '];
const NOT_AGENTS: ReadonlyArray<[string, unknown]> = [
  ['null', null],
  ['a string', 'agent'],
  ['an object without commitMemory', {}],
  ['a commitMemory that is not a function', { commitMemory: 'yes' }],
  ['a close that is not a function', { commitMemory: async () => {}, close: 'later' }],
];

describe('A1, G8: lifecycle session ids', () => {
  it.each(NOT_IDS.map((value) => [String(value), value]))(
    'A1, G8: %s is refused with InvalidIdError by every lifecycle call, before any adapter call, where "", null and undefined are no-ops',
    async (_label, bad) => {
      const opened = await openStore();
      const { lifecycle } = opened;
      const agent = agentOf(opened);
      const id = bad as string;
      const calls: Array<() => unknown> = [
        () => lifecycle.registerAgent(id, agent),
        () => lifecycle.unregisterAgent(id),
        () => lifecycle.markTurnCompleted(id),
        () => lifecycle.markTurnCompleted(id, { agent }),
        () => lifecycle.hasUncommittedWork(id),
        () => lifecycle.commit(id),
        () => lifecycle.commit(id, { agent }),
        () => lifecycle.evict(id),
        () => lifecycle.drain({ agents: new Map([[id, agent]]) }),
      ];
      for (const call of calls) await refusedWith(InvalidIdError, call);
      // G8: '', null and undefined still name no session: every call is a no-op.
      for (const empty of ['', null, undefined]) {
        lifecycle.registerAgent(empty, agent);
        lifecycle.unregisterAgent(empty);
        expect(await lifecycle.markTurnCompleted(empty, { agent })).toBe(0);
        expect(await lifecycle.commit(empty, { agent })).toBe(false);
        expect(await lifecycle.evict(empty)).toBe(false);
      }
      expect(opened.calls).toEqual([]);
      expect(opened.commits).toEqual([]);
      await opened.store.close();
    },
  );
});

describe('A3: lifecycle options and agents', () => {
  const badOptions: ReadonlyArray<[string, unknown, string]> = [
    ['null', null, ''],
    ['a number', 5, ''],
    ['an unknown option', { agnet: {} }, 'agnet'],
    ...NOT_AGENTS.map(([label, agent]): [string, unknown, string] => [
      `agent: ${label}`,
      { agent },
      'agent',
    ]),
  ];
  it.each(badOptions)(
    'A3: markTurnCompleted() and commit() refuse %s with InvalidInputError naming it; nothing is written',
    async (_label, options, path) => {
      const opened = await openStore();
      const { lifecycle } = opened;
      for (const call of [
        () => lifecycle.markTurnCompleted('s1', options as never),
        () => lifecycle.commit('s1', options as never),
        () => lifecycle.markTurnCompleted('', options as never),
      ]) {
        const error = await refusedWith(InvalidInputError, call);
        expect(error.path?.startsWith(path)).toBe(true);
      }
      expect(opened.calls).toEqual([]);
      expect(await lifecycle.hasUncommittedWork('s1')).toBe(false);
      await opened.store.close();
    },
  );

  it.each(NOT_AGENTS)(
    'A3, G7: registerAgent() refuses %s with InvalidInputError, so evict() never meets it',
    async (_label, agent) => {
      const opened = await openStore();
      const { lifecycle } = opened;
      await refusedWith(InvalidInputError, () => lifecycle.registerAgent('s1', agent as never));
      await lifecycle.markTurnCompleted('s1');
      // Nothing was registered: the turn waits for an agent, and evict() reports it kept.
      expect(await lifecycle.evict('s1')).toBe(false);
      lifecycle.registerAgent('s1', agentOf(opened));
      expect(await lifecycle.evict('s1')).toBe(true);
      expect(opened.commits).toEqual(['s1']);
      await opened.store.close();
    },
  );

  it.each([
    ['null', null, ''],
    ['agents as a plain object', { agents: {} }, 'agents'],
    ['agents as an array of pairs', { agents: [['s1', {}]] }, 'agents'],
    ['an agent that is not one', { agents: new Map([['s1', {}]]) }, 'agents'],
    ['an unknown option', { deadline: 5 }, 'deadline'],
    ['a deadline that is not a number', { deadlineMs: '5' }, 'deadlineMs'],
    ['a deadline of NaN', { deadlineMs: Number.NaN }, 'deadlineMs'],
    ['a negative deadline', { deadlineMs: -1 }, 'deadlineMs'],
    ['a deadline past what a timer holds', { deadlineMs: 2 ** 31 }, 'deadlineMs'],
  ])(
    'A3, G6: drain() refuses %s with InvalidInputError naming it; nothing is committed',
    async (_label, options, path) => {
      const opened = await openStore();
      const { lifecycle } = opened;
      await lifecycle.markTurnCompleted('s1', { agent: agentOf(opened) });
      opened.calls.length = 0;
      const error = await refusedWith(InvalidInputError, () => lifecycle.drain(options as never));
      expect(error.path?.startsWith(path)).toBe(true);
      expect(opened.calls).toEqual([]);
      expect(opened.commits).toEqual([]);
      expect(await lifecycle.drain({ agents: new Map([['s1', agentOf(opened)]]) })).toEqual({
        committed: ['s1'],
        failed: [],
        abandoned: [],
      });
      await opened.store.close();
    },
  );
});
