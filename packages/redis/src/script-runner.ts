import { type ChainableCommander, type Redis, ReplyError } from 'ioredis';
import type { RedisClient } from './connection.js';
import { withDeadline } from './deadline.js';
import type { ConfirmMethod } from './durability-plan.js';
import { RedisDurabilityError, toKeepsakeError } from './errors.js';
import type { ScriptDefinition } from './scripts/script.js';

type CommandCall = (...args: Array<string | number | Buffer>) => Promise<unknown>;

export interface DurabilitySettings {
  method: ConfirmMethod;
  replicas: number;
  timeoutMs: number;
  /** The level named in a RedisDurabilityError. */
  level: string;
}

/** One command of a batch: a script of the adapter, or a plain Redis command. */
export type Step =
  | {
      readonly script: ScriptDefinition;
      readonly keys: readonly string[];
      readonly args: ReadonlyArray<string | number | Buffer>;
    }
  | { readonly command: string; readonly args: ReadonlyArray<string | number | Buffer> };

/** Each step's reply, or the error the server answered it with. */
export type StepResult = { ok: true; value: unknown } | { ok: false; error: Error };

/**
 * Sends the adapter's commands: its Lua scripts (ioredis `defineCommand`: EVALSHA, or EVAL
 * on a connection that has not loaded the script) and plain commands, one at a time or as
 * a batch in one pipeline, on one connection (on Cluster: the node of the batch's slot).
 * A durable batch ends with the command that confirms it (WAITAOF or WAIT), which then
 * covers every write of the batch, in the same round trip.
 *
 * Every command writes at most one key with one write (see the README: Redis 7.0 replays
 * a multi-write script cut short by a crash wrongly), so a batch is ordered, not atomic.
 */
export class ScriptRunner {
  durability: DurabilitySettings = { method: 'none', replicas: 0, timeoutMs: 0, level: 'none' };
  private readonly client: RedisClient;
  private readonly deadlineMs: number | null;

  /**
   * `deadlineMs`: how long a batch may wait for its replies before it fails as unavailable.
   * For a Cluster client, whose offline queue holds commands for as long as the cluster is
   * unreachable, instead of failing them (a standalone client made by the adapter fails
   * them on its own: see connection.ts).
   */
  constructor(
    client: RedisClient,
    definitions: readonly ScriptDefinition[],
    deadlineMs: number | null,
  ) {
    this.client = client;
    this.deadlineMs = deadlineMs;
    for (const definition of definitions) {
      // Another adapter on the same client may have defined it already.
      if (typeof (client as unknown as Record<string, unknown>)[definition.name] !== 'function') {
        client.defineCommand(definition.name, { lua: definition.lua });
      }
    }
  }

  /** Runs one script; `durable` adds the configured confirmation. Errors come back typed. */
  async run(
    script: ScriptDefinition,
    keys: readonly string[],
    args: ReadonlyArray<string | number | Buffer>,
    options: { operation: string; durable: boolean },
  ): Promise<unknown> {
    const [result] = await this.batch([{ script, keys, args }], options);
    if (!result!.ok) throw toKeepsakeError(result!.error, options.operation);
    return result!.value;
  }

  /**
   * Runs steps in order in one round trip. Resolves with each step's outcome (a step the
   * server refused does not stop the later ones); rejects, typed, when the connection
   * failed or the durable confirmation fell short.
   */
  async batch(
    steps: readonly Step[],
    options: { operation: string; durable: boolean },
  ): Promise<StepResult[]> {
    const work = this.sendBatch(steps, options);
    if (this.deadlineMs === null) return work;
    return withDeadline(work, this.deadlineMs, options.operation);
  }

  private async sendBatch(
    steps: readonly Step[],
    options: { operation: string; durable: boolean },
  ): Promise<StepResult[]> {
    const confirm = options.durable ? this.durability.method : 'none';
    const needsConfirmation = confirm === 'waitaof' || confirm === 'wait';
    try {
      if (!needsConfirmation && !this.client.isCluster) {
        // One connection keeps the order; sent back to back, the steps share a round trip
        // without the cost of a Pipeline object (a Cluster needs one to keep them on a node).
        const replies = await Promise.allSettled(steps.map((step) => this.send(this.client, step)));
        return replies.map((reply) => {
          if (reply.status === 'fulfilled') return { ok: true, value: reply.value };
          if (isConnectionFailure(reply.reason)) throw reply.reason;
          return { ok: false, error: reply.reason as Error };
        });
      }
      if (steps.length === 1 && !needsConfirmation) {
        return [await settle(this.send(this.client, steps[0]!))];
      }
      const pipeline = this.client.pipeline();
      for (const step of steps) void this.send(pipeline, step);
      if (needsConfirmation) this.addConfirmation(pipeline, confirm);
      const replies = (await pipeline.exec()) ?? [];
      const results: StepResult[] = replies
        .slice(0, steps.length)
        .map(([error, value]) => (error ? { ok: false, error } : { ok: true, value }));
      if (needsConfirmation) {
        const [error, reply] = replies[steps.length] ?? [new Error('no confirmation reply'), null];
        if (error) throw error;
        this.checkConfirmation(confirm, reply, options.operation);
      }
      // A connection failure fails every step alike: report it as the batch's failure.
      const failed = results.find((result) => !result.ok);
      if (failed !== undefined && !failed.ok && isConnectionFailure(failed.error)) {
        throw failed.error;
      }
      return results;
    } catch (error) {
      throw toKeepsakeError(error, options.operation);
    }
  }

  /** C1: confirms everything each master's connection wrote so far. */
  async confirmAll(nodes: readonly Redis[], operation: string): Promise<void> {
    const confirm = this.durability.method;
    if (confirm === 'none' || confirm === 'reply') return;
    await Promise.all(
      nodes.map(async (node) => {
        let reply: unknown;
        try {
          reply =
            confirm === 'waitaof'
              ? await node.call('WAITAOF', 1, 0, this.durability.timeoutMs)
              : await node.call('WAIT', this.durability.replicas, this.durability.timeoutMs);
        } catch (error) {
          throw toKeepsakeError(error, operation);
        }
        this.checkConfirmation(confirm, reply, operation);
      }),
    );
  }

  private send(target: RedisClient | ChainableCommander, step: Step): Promise<unknown> {
    const calls = target as unknown as Record<string, CommandCall>;
    if ('script' in step) {
      return calls[step.script.name]!.call(target, step.keys.length, ...step.keys, ...step.args);
    }
    return (target as RedisClient).call(step.command, ...step.args);
  }

  private addConfirmation(pipeline: ChainableCommander, confirm: ConfirmMethod): void {
    if (confirm === 'waitaof') pipeline.call('WAITAOF', 1, 0, this.durability.timeoutMs);
    else pipeline.call('WAIT', this.durability.replicas, this.durability.timeoutMs);
  }

  private checkConfirmation(confirm: ConfirmMethod, reply: unknown, operation: string): void {
    const { level, replicas, timeoutMs } = this.durability;
    if (confirm === 'waitaof') {
      const local = Array.isArray(reply) ? Number(reply[0]) : 0;
      if (local >= 1) return;
      throw new RedisDurabilityError(
        level,
        'the server',
        `${operation}: WAITAOF did not confirm the local AOF fsync within ${timeoutMs} ms (the write itself landed)`,
        { isRetryable: true },
      );
    }
    if (confirm === 'wait') {
      const acknowledged = Number(reply);
      if (acknowledged >= replicas) return;
      throw new RedisDurabilityError(
        level,
        'the server',
        `${operation}: WAIT counted ${acknowledged} of ${replicas} replica(s) within ${timeoutMs} ms (the write itself landed on the master)`,
        { isRetryable: true },
      );
    }
  }
}

async function settle(promise: Promise<unknown>): Promise<StepResult> {
  try {
    return { ok: true, value: await promise };
  } catch (error) {
    if (isConnectionFailure(error)) throw error;
    return { ok: false, error: error as Error };
  }
}

/** A reply error is the server's answer to one command; anything else is the connection's. */
function isConnectionFailure(error: unknown): boolean {
  return !(error instanceof ReplyError);
}
