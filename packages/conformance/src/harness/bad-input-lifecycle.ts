/**
 * fast-check arbitraries of bad arguments to the memory lifecycle (issue 35), for
 * spec/bad-input-entry-points.ts: session ids that are not ids (falsy non-strings too), and
 * options and agents that are not what a call takes. Each yields plain data; the value is
 * built in the test.
 */
import type { MemoryAgent } from '@keepsake/core';
import fc from 'fast-check';
import { badId } from './bad-input-arbitraries.js';

/** Session ids no lifecycle call may take: falsy non-strings too (they are not "no id"). */
export const badLifecycleId: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(0, -0, Number.NaN, false, 0n) },
  badId.filter((value) => value !== '' && value !== null && value !== undefined),
);

/** G8: what names no session, for which every call is a no-op. */
export const EMPTY_IDS = ['', null, undefined] as const;

export const LIFECYCLE_ID_SLOTS = [
  'registerAgent',
  'unregisterAgent',
  'markTurnCompleted',
  'hasUncommittedWork',
  'commit',
  'evict',
  'drain-agents',
] as const;

export type LifecycleIdSlot = (typeof LIFECYCLE_ID_SLOTS)[number];

/** Values that are not a memory agent, as plain data: built by `notAnAgent`. */
export const NOT_AGENT_KINDS = [
  'null',
  'string',
  'number',
  'empty-object',
  'commit-not-a-function',
  'close-not-a-function',
  'array',
  'throwing-getter',
] as const;

export type NotAgentKind = (typeof NOT_AGENT_KINDS)[number];

export function notAnAgent(kind: NotAgentKind): unknown {
  const commitMemory = async () => {};
  switch (kind) {
    case 'null':
      return null;
    case 'string':
      return 'agent';
    case 'number':
      return 1;
    case 'empty-object':
      return {};
    case 'commit-not-a-function':
      return { commitMemory: 'later' };
    case 'close-not-a-function':
      return { commitMemory, close: true };
    case 'array':
      return [commitMemory];
    case 'throwing-getter':
      return {
        get commitMemory(): never {
          throw new Error('this getter throws');
        },
      };
  }
}

export type BadLifecycleCall =
  | { call: 'registerAgent'; agent: NotAgentKind }
  | { call: 'markTurnCompleted' | 'commit'; options: BadAgentOptions }
  | { call: 'drain'; options: BadDrainOptions };

export type BadAgentOptions =
  | { kind: 'not-an-object'; value: unknown }
  | { kind: 'unknown-key'; key: string }
  | { kind: 'agent'; agent: NotAgentKind };

export type BadDrainOptions =
  | { kind: 'not-an-object'; value: unknown }
  | { kind: 'unknown-key'; key: string }
  | { kind: 'agents-not-a-map'; shape: 'object' | 'array' | 'string' | 'null' }
  | { kind: 'agents-bad-agent'; agent: NotAgentKind }
  | { kind: 'deadline'; value: unknown };

export const notAnObject: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant(null),
  fc.integer(),
  fc.string({ maxLength: 4 }),
  fc.boolean(),
);
const unknownKey = (known: readonly string[]) =>
  fc.stringMatching(/^[a-zA-Z][a-zA-Z0-9]{0,9}$/).filter((key) => !known.includes(key));
const notAgentKind = fc.constantFrom(...NOT_AGENT_KINDS);

export const badLifecycleCall: fc.Arbitrary<BadLifecycleCall> = fc.oneof(
  notAgentKind.map((agent) => ({ call: 'registerAgent' as const, agent })),
  fc.record({
    call: fc.constantFrom('markTurnCompleted' as const, 'commit' as const),
    options: fc.oneof(
      notAnObject.map((value) => ({ kind: 'not-an-object' as const, value })),
      unknownKey(['agent']).map((key) => ({ kind: 'unknown-key' as const, key })),
      notAgentKind.map((agent) => ({ kind: 'agent' as const, agent })),
    ),
  }),
  fc.record({
    call: fc.constant('drain' as const),
    options: fc.oneof(
      notAnObject.map((value) => ({ kind: 'not-an-object' as const, value })),
      unknownKey(['agents', 'deadlineMs']).map((key) => ({ kind: 'unknown-key' as const, key })),
      fc
        .constantFrom('object' as const, 'array' as const, 'string' as const, 'null' as const)
        .map((shape) => ({ kind: 'agents-not-a-map' as const, shape })),
      notAgentKind.map((agent) => ({ kind: 'agents-bad-agent' as const, agent })),
      fc
        .oneof(
          fc.constantFrom('5', null, Number.NaN, Number.POSITIVE_INFINITY, 0, 2 ** 31, true),
          fc.integer({ max: -1 }),
          fc.double({ min: 0.1, max: 99.9, noNaN: true }).filter((v) => !Number.isInteger(v)),
        )
        .map((value) => ({ kind: 'deadline' as const, value })),
    ),
  }),
);

/** The options object a BadAgentOptions or BadDrainOptions describes, for `sessionId`. */
export function lifecycleOptionsOf(
  options: BadAgentOptions | BadDrainOptions,
  sessionId: string,
  agent: MemoryAgent,
): unknown {
  switch (options.kind) {
    case 'not-an-object':
      return options.value;
    case 'unknown-key':
      return { [options.key]: agent };
    case 'agent':
      return { agent: notAnAgent(options.agent) };
    case 'agents-not-a-map': {
      const shapes = {
        object: { [sessionId]: agent },
        array: [[sessionId, agent]],
        string: sessionId,
        null: null,
      };
      return { agents: shapes[options.shape] };
    }
    case 'agents-bad-agent':
      return { agents: new Map([[sessionId, notAnAgent(options.agent)]]) };
    case 'deadline':
      return { deadlineMs: options.value };
  }
}

/** The argument a refusal of `bad` must name (its error's `path` starts with it). */
export function lifecyclePathOf(bad: BadLifecycleCall): string {
  if (bad.call === 'registerAgent') return 'agent';
  const { options } = bad;
  switch (options.kind) {
    case 'not-an-object':
      return '';
    case 'unknown-key':
      return options.key;
    case 'agent':
      return 'agent';
    case 'agents-not-a-map':
    case 'agents-bad-agent':
      return 'agents';
    case 'deadline':
      return 'deadlineMs';
  }
}
