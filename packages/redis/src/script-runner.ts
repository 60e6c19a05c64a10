import { BackendUnavailableError } from '@keepsake/core';
import { type ChainableCommander, type Redis, ReplyError } from 'ioredis';
import type { RedisClient } from './connection.js';

type NetStream = Redis['stream'];

import { withDeadline } from './deadline.js';
import type { ConfirmMethod } from './durability-plan.js';
import { ADAPTER_NAME, RedisDurabilityError, toKeepsakeError } from './errors.js';
import type { ScriptDefinition } from './scripts/script.js';
import { ScriptCall } from './scripts/script-call.js';

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
  | ScriptStep
  | { readonly command: string; readonly args: ReadonlyArray<string | number | Buffer> };

export interface ScriptStep {
  readonly script: ScriptDefinition;
  readonly keys: readonly string[];
  readonly args: ReadonlyArray<string | number | Buffer>;
}

/** Each step's reply, or the error the server answered it with. */
export type StepResult = { ok: true; value: unknown } | { ok: false; error: Error };

/**
 * Sends the adapter's commands: its Lua scripts (EVALSHA, or EVAL on a connection that has
 * not run the script: `ScriptCall` on the client, the defined command in a pipeline) and
 * plain commands, one at a time or as
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
  /** What the current event-loop turn holds back until it ends (see endTurn), if anything. */
  private turn: Turn | null = null;
  /** How each script is called on the client itself (outside pipelines). */
  private readonly scriptCalls = new Map<ScriptDefinition, ScriptCall>();

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
   * Whether `sendAlone` may send a step of this durability: on a standalone server when the
   * write's confirmation is its reply (as for `grouped`).
   */
  sendsAlone(durable: boolean): boolean {
    return this.groupsWrites(durable);
  }

  /**
   * `batch([step])` for a save's write when `sendsAlone`: the reply itself, without the
   * batch's layers (a save sends one step, and those layers were a measurable part of it).
   * Rejects with the server's ReplyError, or the connection's failure (the caller types it).
   */
  sendAlone(step: Step): Promise<unknown> {
    this.holdWritesForTurn();
    return this.send(this.client, step);
  }

  /**
   * Runs steps in order in one round trip. Resolves with each step's outcome (a step the
   * server refused does not stop the later ones); rejects, typed, when the connection
   * failed or the durable confirmation fell short.
   */
  batch(
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
    if (!this.client.isCluster) this.holdWritesForTurn();
    try {
      // A save's write alone (the common batch): one reply, no array of settled promises.
      if (steps.length === 1 && !needsConfirmation) {
        return [await settle(this.send(this.client, steps[0]!))];
      }
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
      const pipeline = this.client.pipeline();
      for (const step of steps) void this.send(pipeline, step);
      if (needsConfirmation) this.addConfirmation(pipeline, confirm);
      const replies = (await pipeline.exec()) ?? [];
      // C3 on Cluster: a step answered MOVED or ASK after a failover (ioredis re-sends a
      // pipeline only when every reply is a redirection; the confirmation that follows the
      // steps is not one, it failed on the demoted node). Retryable, as a lost connection.
      const moved = replies
        .slice(0, steps.length)
        .find(([error]) => error instanceof ReplyError && isRedirection(error as Error));
      if (moved !== undefined) {
        throw new BackendUnavailableError(
          ADAPTER_NAME,
          `${options.operation}: ${(moved[0] as Error).message} (the slot's master changed, a failover: a write of the batch may or may not have been applied)`,
          { cause: moved[0] },
        );
      }
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

  /**
   * Whether `grouped()` may be used for a write of this durability: on a standalone server
   * when the write's confirmation is its reply (no WAITAOF or WAIT has to follow it).
   */
  groupsWrites(durable: boolean): boolean {
    const confirm = durable ? this.durability.method : 'none';
    return !this.client.isCluster && confirm !== 'waitaof' && confirm !== 'wait';
  }

  /**
   * Standalone (see `groupsWrites`): adds one entry to a call of `script` that carries the
   * entries of every caller of this event-loop turn, sent when the turn ends, after every
   * command sent during it. The call's keys are `sharedKey` (the same for every entry), then
   * each entry's `entryKey`; its args each entry's `entryArgs` in turn (the script walks
   * them). At most GROUP_LIMIT entries per call. Resolves with the call's outcome, the same
   * for every entry; rejects when the connection failed.
   */
  grouped(
    script: ScriptDefinition,
    sharedKey: string,
    entryKey: string,
    entryArgs: ReadonlyArray<string | number | Buffer>,
  ): Promise<StepResult> {
    const turn = this.currentTurn();
    let groups = turn.groups.get(script);
    if (groups === undefined) {
      groups = new Map();
      turn.groups.set(script, groups);
    }
    let group = groups.get(sharedKey);
    if (group === undefined || group.entries === GROUP_LIMIT) {
      if (group !== undefined) turn.full.push(group);
      group = newGroup(script, sharedKey);
      groups.set(sharedKey, group);
    }
    group.entries++;
    group.keys.push(entryKey);
    for (const arg of entryArgs) group.args.push(arg);
    return group.outcome;
  }

  /**
   * Standalone: holds the connection's socket writes until the current event-loop turn has
   * run its callbacks and promise jobs (`cork`, then `uncork` in `process.nextTick`, which
   * runs once the microtask queue is empty), so that every command sent in that turn
   * leaves in one `writev` instead of one syscall each (in parts of TURN_CHUNK batches,
   * each with the grouped calls of its saves). The bytes, their order and the
   * replies are the same; commands written to a connection that breaks before the turn
   * ends fail like any written command (never resent: see connection.ts).
   */
  private holdWritesForTurn(): void {
    const turn = this.currentTurn();
    // A long turn lets its first part go while it goes on (Redis starts on it meanwhile).
    if (turn.batches === TURN_CHUNK) this.release(turn);
    turn.batches++;
    if (turn.corked !== null) return;
    const stream = (this.client as Redis).stream as NetStream | undefined;
    if (this.client.status !== 'ready' || stream === undefined || !stream.writable) return;
    stream.cork();
    turn.corked = stream;
  }

  private currentTurn(): Turn {
    if (this.turn !== null) return this.turn;
    const turn: Turn = { corked: null, batches: 0, groups: new Map(), full: [] };
    this.turn = turn;
    process.nextTick(() => {
      this.turn = null;
      this.release(turn);
    });
    return turn;
  }

  /** Sends the grouped calls held so far after everything sent before them, then lets it all go. */
  private release(turn: Turn): void {
    const groups = [...turn.full];
    for (const open of turn.groups.values()) groups.push(...open.values());
    turn.full = [];
    turn.groups.clear();
    turn.batches = 0;
    for (const group of groups) {
      const { script, keys, args } = group;
      settle(this.send(this.client, { script, keys, args })).then(group.resolve, group.reject);
    }
    const corked = turn.corked;
    turn.corked = null;
    corked?.uncork();
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

  /** Sends a step on the client itself, or queues it on a pipeline (`target`). */
  private send(target: RedisClient | ChainableCommander, step: Step): Promise<unknown> {
    if ('script' in step) {
      if (target === this.client) {
        return this.scriptCall(step.script).call(this.client, step.keys, step.args);
      }
      // A pipeline keeps the defined command: ioredis loads the scripts a pipeline uses.
      const calls = target as unknown as Record<string, CommandCall>;
      return calls[step.script.name]!.call(target, step.keys.length, ...step.keys, ...step.args);
    }
    return (target as RedisClient).call(step.command, ...step.args);
  }

  private scriptCall(script: ScriptDefinition): ScriptCall {
    let call = this.scriptCalls.get(script);
    if (call === undefined) {
      call = new ScriptCall(script);
      this.scriptCalls.set(script, call);
    }
    return call;
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

/**
 * Batches a turn holds back at most: a turn that sends more lets them go in parts, so that
 * Redis works on the first while the rest are prepared (Redis 7.0 reads 16 KiB of a
 * connection per event-loop turn, about ten 1 KiB saves, and fsyncs once per turn).
 */
const TURN_CHUNK = 10;

/** Most entries one grouped call carries (a Lua `unpack` of three values each stays small). */
const GROUP_LIMIT = 128;

interface Turn {
  /** The socket corked for this turn, if any. */
  corked: NetStream | null;
  /** Batches sent since the turn began or last let its writes go. */
  batches: number;
  /** The open group of each grouped script and shared key, and the groups that filled up. */
  groups: Map<ScriptDefinition, Map<string, Group>>;
  full: Group[];
}

interface Group {
  readonly script: ScriptDefinition;
  readonly keys: string[];
  readonly args: Array<string | number | Buffer>;
  entries: number;
  readonly outcome: Promise<StepResult>;
  readonly resolve: (result: StepResult) => void;
  readonly reject: (error: unknown) => void;
}

function newGroup(script: ScriptDefinition, sharedKey: string): Group {
  let resolve!: (result: StepResult) => void;
  let reject!: (error: unknown) => void;
  const outcome = new Promise<StepResult>((onResult, onError) => {
    resolve = onResult;
    reject = onError;
  });
  // Every entry awaits it; this keeps a failure of a group nobody awaits any more quiet.
  outcome.catch(() => undefined);
  return { script, keys: [sharedKey], args: [], entries: 0, outcome, resolve, reject };
}

async function settle(promise: Promise<unknown>): Promise<StepResult> {
  try {
    return { ok: true, value: await promise };
  } catch (error) {
    if (isConnectionFailure(error)) throw error;
    return { ok: false, error: error as Error };
  }
}

/** MOVED and ASK: the command was not run on this node (its slot is served elsewhere). */
function isRedirection(error: Error): boolean {
  return error.message.startsWith('MOVED ') || error.message.startsWith('ASK ');
}

/** A reply error is the server's answer to one command; anything else is the connection's. */
function isConnectionFailure(error: unknown): boolean {
  return !(error instanceof ReplyError);
}
