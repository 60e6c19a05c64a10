import { createHash } from 'node:crypto';
import { Command, ReplyError } from 'ioredis';
import type { RedisClient } from '../connection.js';
import type { ScriptDefinition } from './script.js';

type Argument = string | number | Buffer;

/**
 * Calls one of the adapter's scripts on a client (a connection, or a Cluster, which routes
 * it by its first key): EVALSHA, with the script's body (EVAL) instead the first time on
 * each connection and once more after a NOSCRIPT reply (a SCRIPT FLUSH, a failover to a
 * server that never ran it). That is what ioredis `defineCommand` sends, built directly on
 * its `Command`: a save makes one such call, and the layers of a defined command (three
 * copies of the arguments, two more promises, a closure per call) cost about a tenth of a
 * save's time in Node. Pipelines still use the defined commands (see ScriptRunner).
 */
export class ScriptCall {
  readonly definition: ScriptDefinition;
  readonly sha: string;
  /** The connections (sockets) this script's body was written to. */
  private readonly bodySentOn = new WeakSet<object>();

  constructor(definition: ScriptDefinition) {
    this.definition = definition;
    this.sha = createHash('sha1').update(definition.lua).digest('hex');
  }

  call(client: RedisClient, keys: readonly string[], args: readonly Argument[]): Promise<unknown> {
    const sent = this.send(client, keys, args);
    return sent.promise.catch((error: unknown) => {
      // NOSCRIPT: the script did not run, so sending it again cannot run it twice.
      if (!isNoScript(error)) throw error;
      this.bodySentOn.delete(sent.socket ?? {});
      return this.send(client, keys, args).promise;
    });
  }

  /** Whether a call written to `socket` must carry the body; records that it does. */
  bodyNeededOn(socket: object): boolean {
    if (this.bodySentOn.has(socket)) return false;
    this.bodySentOn.add(socket);
    return true;
  }

  private send(
    client: RedisClient,
    keys: readonly string[],
    args: readonly Argument[],
  ): ScriptCommand {
    const commandArgs: Argument[] = [this.sha, keys.length];
    for (const key of keys) commandArgs.push(key);
    for (const arg of args) commandArgs.push(arg);
    const command = new ScriptCommand(this, commandArgs);
    void client.sendCommand(command);
    return command;
  }
}

/** EVALSHA, turned into EVAL when written to a connection that has not run the script. */
class ScriptCommand extends Command {
  private readonly script: ScriptCall;
  /** The connection it was written to, once written. */
  socket: object | null = null;

  constructor(script: ScriptCall, args: Argument[]) {
    super('evalsha', args, { replyEncoding: 'utf8' });
    this.script = script;
  }

  override toWritable(socket: object): string | Buffer {
    this.socket = socket;
    // Decided when written, not when made: a command queued while the client reconnects
    // is written to the new connection, which has run nothing yet.
    if (this.script.bodyNeededOn(socket)) {
      this.name = 'eval';
      this.args[0] = this.script.definition.lua;
    } else if (this.name === 'eval') {
      this.name = 'evalsha';
      this.args[0] = this.script.sha;
    }
    return super.toWritable(socket);
  }
}

function isNoScript(error: unknown): boolean {
  return error instanceof ReplyError && (error as Error).message.startsWith('NOSCRIPT');
}
