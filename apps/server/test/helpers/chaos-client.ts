import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import type { ChildServer } from './child-server.js';
import { call, type Json, readEvents, type SseEvent } from './http-client.js';

/** A seeded pseudo-random source (mulberry32): the seed printed by a test reproduces its choices. */
export function seededRandom(seed: number): (low: number, high: number) => number {
  let state = seed >>> 0;
  return (low, high) => {
    state = (state + 0x6d2b79f5) >>> 0;
    let value = state;
    value = Math.imul(value ^ (value >>> 15), value | 1);
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61);
    const unit = ((value ^ (value >>> 14)) >>> 0) / 4294967296;
    return low + Math.floor(unit * (high - low + 1));
  };
}

/**
 * The server instances a load balancer would spread requests over: the test adds each one it
 * starts and removes each one before it kills it, so a request goes to an instance that was
 * up when it was picked (it may still be killed while the request runs).
 */
export class InstancePool {
  private readonly instances: ChildServer[] = [];

  constructor(private readonly random: (low: number, high: number) => number) {}

  get size(): number {
    return this.instances.length;
  }

  add(instance: ChildServer): void {
    this.instances.push(instance);
  }

  /** Takes a random instance out of the pool, to be killed. */
  takeRandom(): ChildServer {
    const [taken] = this.instances.splice(this.random(0, this.instances.length - 1), 1);
    return taken!;
  }

  pick(): ChildServer {
    return this.instances[this.random(0, this.instances.length - 1)]!;
  }
}

/** One chat turn as its client saw it. */
export interface TurnRecord {
  readonly content: string;
  /** Set once a send was answered 202 (or 200, a replay): the user turn is durable (E1). */
  runId: string | null;
  /** Every SSE event received for the run, reconnects included, in arrival order. */
  readonly events: SseEvent[];
  /** The `end` event's data, once one arrived. */
  ending: Json | null;
  readonly problems: string[];
  /** Streams that closed before `end` (a killed instance) and were resumed elsewhere. */
  resumes: number;
  /** Sends answered with something other than 202/200 or not answered, then sent again. */
  resends: number;
  /** The instance whose stream the client reads now (diagnostics). */
  streamingFrom: string | null;
}

export interface ChaosClientOptions {
  pool: InstancePool;
  token: string;
  sessionId: string;
  name: string;
  /** Called for each journaled token record this client receives. */
  onToken: () => void;
  /** Ends the client's loops (the test is over). */
  signal: AbortSignal;
}

/**
 * What a send or a stream meets while instances die and Redis fails over, and tries again:
 * the backend unavailable (503), and a session still busy with the previous turn (409
 * session_busy: a stream ends on the run's last journal record, and the session write that
 * ends its turn comes after it). Anything else, a 500 included, is a defect and fails the
 * test.
 */
function isTransient(status: number, body: Json): boolean {
  return status === 503 || (status === 409 && body?.error?.code === 'session_busy');
}

/**
 * A chat client in a loop: sends a message with an Idempotency-Key to a random instance
 * (again, with the same key, until one answers 202 or 200), then follows the run's SSE stream,
 * resuming with Last-Event-ID on another random instance whenever its stream closes before
 * `end`, and checks as it goes that each journal record arrives once, in order.
 */
export class ChaosClient {
  readonly turns: TurnRecord[] = [];
  /** Unexpected answers seen (status and error code): counted, then retried. */
  readonly unexpected: string[] = [];

  constructor(private readonly options: ChaosClientOptions) {}

  get sessionId(): string {
    return this.options.sessionId;
  }

  async run(shouldStop: () => boolean): Promise<void> {
    while (!shouldStop()) await this.turn(`${this.options.name} turn ${this.turns.length + 1}`);
  }

  private async turn(content: string): Promise<void> {
    const record: TurnRecord = {
      content,
      runId: null,
      events: [],
      ending: null,
      problems: [],
      resumes: 0,
      resends: 0,
      streamingFrom: null,
    };
    this.turns.push(record);
    const eventsUrl = await this.send(record);
    await this.follow(record, eventsUrl);
  }

  private async send(record: TurnRecord): Promise<string> {
    const { pool, token, sessionId } = this.options;
    const key = randomUUID();
    for (;;) {
      this.options.signal.throwIfAborted();
      const instance = pool.pick();
      const response = await call(instance.url, `/api/sessions/${sessionId}/messages`, {
        token,
        method: 'POST',
        body: { content: record.content },
        headers: { 'idempotency-key': key },
      }).catch(() => null);
      if (response !== null && (response.status === 202 || response.status === 200)) {
        record.runId = response.body.runId as string;
        return response.body.eventsUrl as string;
      }
      if (response !== null && !isTransient(response.status, response.body)) {
        throw new Error(`send answered ${response.status}: ${JSON.stringify(response.body)}`);
      }
      if (response !== null) this.note(response.status, response.body);
      record.resends += 1;
      await delay(100);
    }
  }

  private async follow(record: TurnRecord, eventsUrl: string): Promise<void> {
    const { pool, token } = this.options;
    let last = 0;
    for (let attempt = 0; ; attempt++) {
      this.options.signal.throwIfAborted();
      if (attempt > 0) record.resumes += 1;
      const instance = pool.pick();
      record.streamingFrom = instance.url;
      const stream = await readEvents(`${instance.url}${eventsUrl}`, {
        token,
        lastEventId: last,
        signal: this.options.signal,
      }).catch(() => null);
      if (stream === null || stream.status !== 200) {
        if (stream !== null && !isTransient(stream.status, stream.errorBody)) {
          throw new Error(`events answered ${stream.status}: ${JSON.stringify(stream.errorBody)}`);
        }
        if (stream !== null) this.note(stream.status, stream.errorBody);
        await delay(100);
        continue;
      }
      for (const event of stream.events) {
        record.events.push(event);
        if (event.id === undefined) continue;
        const sequence = Number(event.id);
        if (sequence !== last + 1) {
          record.problems.push(`record ${sequence} arrived after record ${last}`);
        }
        last = Math.max(last, sequence);
        if (event.event === 'token') this.options.onToken();
      }
      if (stream.ended) {
        record.ending = stream.events.at(-1)?.data;
        return;
      }
    }
  }

  private note(status: number, body: Json): void {
    this.unexpected.push(`${status} ${body?.error?.code ?? ''}`.trim());
  }
}
