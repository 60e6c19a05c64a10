import type { ChainableCommander, Redis } from 'ioredis';
import type { RedisClient } from './connection.js';
import type { ConfirmMethod } from './durability-plan.js';
import { RedisDurabilityError, toKeepsakeError } from './errors.js';
import type { ScriptDefinition } from './scripts/script.js';

type ScriptCall = (...args: Array<string | number>) => Promise<unknown>;

export interface DurabilitySettings {
  method: ConfirmMethod;
  replicas: number;
  timeoutMs: number;
  /** The level named in a RedisDurabilityError. */
  level: string;
}

/**
 * Runs the adapter's Lua scripts and, for a durable write, the command that confirms it:
 * WAITAOF or WAIT goes in one pipeline with the write, on the same connection (on Cluster,
 * the node that owns the key), so it covers exactly that write, in one round trip.
 */
export class ScriptRunner {
  durability: DurabilitySettings = { method: 'none', replicas: 0, timeoutMs: 0, level: 'none' };

  private readonly client: RedisClient;

  constructor(client: RedisClient, definitions: readonly ScriptDefinition[]) {
    this.client = client;
    for (const definition of definitions) {
      // Another adapter on the same client may have defined it already.
      if (typeof (client as unknown as Record<string, unknown>)[definition.name] !== 'function') {
        client.defineCommand(definition.name, { lua: definition.lua });
      }
    }
  }

  /** Runs a script; `durable` adds the configured confirmation. Errors come back typed. */
  async run(
    definition: ScriptDefinition,
    keys: readonly string[],
    args: ReadonlyArray<string | number>,
    options: { operation: string; durable: boolean },
  ): Promise<unknown> {
    const confirm = options.durable ? this.durability.method : 'none';
    try {
      if (confirm === 'none' || confirm === 'reply') {
        const call = (this.client as unknown as Record<string, ScriptCall>)[definition.name]!;
        return await call.call(this.client, keys.length, ...keys, ...args);
      }
      const pipeline = this.client.pipeline();
      (pipeline as unknown as Record<string, ScriptCall>)[definition.name]!.call(
        pipeline,
        keys.length,
        ...keys,
        ...args,
      );
      this.addConfirmation(pipeline, confirm);
      const results = (await pipeline.exec()) ?? [];
      const [written, confirmed] = results;
      if (written?.[0]) throw written[0];
      if (confirmed?.[0]) throw confirmed[0];
      this.checkConfirmation(confirm, confirmed?.[1], options.operation);
      return written?.[1];
    } catch (error) {
      throw toKeepsakeError(error, options.operation);
    }
  }

  /** C1: confirms everything this connection wrote so far, on every master. */
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
