import { z } from 'zod';
import { InvalidInputError } from '../errors/input-errors.js';
import { assertCallInput } from '../options/option-schemas.js';
import { assertValidId } from '../validation/ids.js';
import type { MemoryAgent } from './memory-types.js';

/**
 * The arguments of the memory lifecycle's calls (G1–G9), checked where they enter like every
 * other call's (A1, A3): a typed error naming the argument, before any adapter call, instead
 * of a TypeError deep inside a commit or an eviction (issue 35).
 */

/**
 * G8: `''`, `null` and `undefined` name no session (null: the call does nothing); anything
 * else must be an A1 id. A falsy value of another type (0, NaN, false) is a wrong id, not a
 * missing one.
 */
export function lifecycleSessionId(value: unknown): string | null {
  if (value === '' || value === null || value === undefined) return null;
  return assertValidId(value);
}

/** The agent of a call: an object with a `commitMemory` method and, if any, a `close` one. */
export function assertMemoryAgent(value: unknown, call: string, path: string): MemoryAgent {
  let commitMemory: unknown;
  let close: unknown;
  if ((typeof value === 'object' && value !== null) || typeof value === 'function') {
    try {
      ({ commitMemory, close } = value as Partial<Record<keyof MemoryAgent, unknown>>);
    } catch (cause) {
      throw new InvalidInputError(`${call}: \`${path}\` could not be read`, { cause, path });
    }
  }
  if (typeof commitMemory !== 'function') {
    throw new InvalidInputError(
      `${call}: \`${path}\` must be a memory agent, an object with a commitMemory() method; nothing was done`,
      { path },
    );
  }
  if (close !== undefined && typeof close !== 'function') {
    throw new InvalidInputError(
      `${call}: \`${path}.close\` must be a method when the agent has one; nothing was done`,
      { path: `${path}.close` },
    );
  }
  return value as MemoryAgent;
}

const agentOptionsSchema = z.strictObject({ agent: z.unknown().optional() });

/** `markTurnCompleted()` and `commit()`: `{ agent? }`, or nothing. */
export function agentOption(options: unknown, call: string): MemoryAgent | undefined {
  assertCallInput(agentOptionsSchema, options, call);
  const agent = (options as { agent?: unknown } | undefined)?.agent;
  return agent === undefined ? undefined : assertMemoryAgent(agent, call, 'agent');
}

/** The longest delay a Node timer holds; a longer one fires at once. */
const MAX_TIMER_MS = 2_147_483_647;

const drainOptionsSchema = z.strictObject({
  deadlineMs: z.number().int().positive().max(MAX_TIMER_MS).optional(),
  agents: z.unknown().optional(),
});

/**
 * G6: `drain()`'s options, with `agents` copied into a Map of checked ids and agents (a Map
 * from another realm too; a plain object or an array of pairs is refused, never guessed at).
 */
export function drainOptions(options: unknown): {
  deadlineMs: number | undefined;
  agents: ReadonlyMap<string, MemoryAgent>;
} {
  assertCallInput(drainOptionsSchema, options, 'drain()');
  const given = options as { deadlineMs?: number; agents?: unknown } | undefined;
  const agents = new Map<string, MemoryAgent>();
  if (given?.agents !== undefined) {
    if (Object.prototype.toString.call(given.agents) !== '[object Map]') {
      throw new InvalidInputError(
        'drain(): option `agents` must be a Map of session id to agent (`new Map([[sessionId, agent]])`); nothing was done',
        { path: 'agents' },
      );
    }
    for (const [sessionId, agent] of given.agents as Map<unknown, unknown>) {
      const id = assertValidId(sessionId);
      agents.set(id, assertMemoryAgent(agent, 'drain()', `agents.get(${JSON.stringify(id)})`));
    }
  }
  return { deadlineMs: given?.deadlineMs, agents };
}
