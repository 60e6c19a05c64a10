import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from './free-port.js';
import { RedisServerProcess, type TestPersistence, trackChild } from './redis-server.js';

export interface RedisSentinelOptions {
  /** Replicas of the primary. @default 2 */
  replicas?: number;
  /** Sentinels watching it (the quorum is a majority of them). @default 3 */
  sentinels?: number;
  /** The master group name. @default 'keepsake' */
  name?: string;
  /** @default 'aof-always' */
  persistence?: TestPersistence;
  /** Sentinel's `down-after-milliseconds`: how soon a silent primary is down. @default 2_000 (less finds a live primary on a busy 2-core machine down: a failover nobody asked for) */
  downAfterMs?: number;
  /** Sentinel's `failover-timeout`. @default 2_000 */
  failoverTimeoutMs?: number;
}

/** One `redis-server --sentinel` this process started, with its config file in a temp dir. */
export class RedisSentinelProcess {
  readonly host = '127.0.0.1';
  readonly port: number;
  private readonly directory: string;
  private child: ChildProcess | null = null;
  private output = '';

  private constructor(port: number, directory: string) {
    this.port = port;
    this.directory = directory;
  }

  /** Starts a sentinel monitoring `primary` as `name`, resolving once it monitors it. */
  static async start(
    primary: { host: string; port: number },
    settings: { name: string; quorum: number; downAfterMs: number; failoverTimeoutMs: number },
  ): Promise<RedisSentinelProcess> {
    const directory = await mkdtemp(join(tmpdir(), 'keepsake-sentinel-test-'));
    const sentinel = new RedisSentinelProcess(await freePort(), directory);
    const { name } = settings;
    await writeFile(
      join(directory, 'sentinel.conf'),
      [
        `port ${sentinel.port}`,
        `bind ${sentinel.host}`,
        `dir ${directory}`,
        `sentinel monitor ${name} ${primary.host} ${primary.port} ${settings.quorum}`,
        `sentinel down-after-milliseconds ${name} ${settings.downAfterMs}`,
        `sentinel failover-timeout ${name} ${settings.failoverTimeoutMs}`,
        `sentinel parallel-syncs ${name} 2`,
        '',
      ].join('\n'),
    );
    try {
      await sentinel.spawn();
    } catch (error) {
      await sentinel.dispose();
      throw error;
    }
    return sentinel;
  }

  log(): string {
    return this.output;
  }

  private async spawn(): Promise<void> {
    const binary = process.env.KEEPSAKE_TEST_REDIS_SERVER ?? 'redis-server';
    const child = spawn(
      binary,
      [join(this.directory, 'sentinel.conf'), '--sentinel', '--daemonize', 'no', '--logfile', ''],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.child = child;
    trackChild(child);
    await new Promise<void>((resolve, reject) => {
      const onData = (chunk: Buffer) => {
        if (this.output.length < 1_000_000) this.output += chunk.toString('utf8');
        if (this.output.includes('+monitor master')) {
          child.off('exit', onExit);
          resolve();
        }
      };
      const onExit = (code: number | null) =>
        reject(new Error(`redis sentinel exited (${code}) before it was ready:\n${this.output}`));
      child.stdout?.on('data', onData);
      child.stderr?.on('data', (chunk: Buffer) => {
        this.output += chunk.toString('utf8');
      });
      child.once('exit', onExit);
      child.once('error', reject);
    });
  }

  async dispose(): Promise<void> {
    const child = this.child;
    if (child !== null && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGKILL');
      await exited;
    }
    await rm(this.directory, { recursive: true, force: true });
  }
}

/**
 * A primary, its replicas and the sentinels watching them, all started by this process on
 * free loopback ports (stopped by pid). `failover()` SIGKILLs the primary, waits for the
 * sentinels to promote a replica, and starts the killed server again as a replica of the
 * new primary.
 */
export class RedisSentinelDeployment {
  readonly name: string;
  /** Every data server; which one is the primary changes with each failover. */
  readonly servers: readonly RedisServerProcess[];
  readonly sentinels: readonly RedisSentinelProcess[];

  private constructor(
    name: string,
    servers: readonly RedisServerProcess[],
    sentinels: readonly RedisSentinelProcess[],
  ) {
    this.name = name;
    this.servers = servers;
    this.sentinels = sentinels;
  }

  static async start(options: RedisSentinelOptions = {}): Promise<RedisSentinelDeployment> {
    const name = options.name ?? 'keepsake';
    const persistence = options.persistence ?? 'aof-always';
    const servers: RedisServerProcess[] = [];
    const sentinels: RedisSentinelProcess[] = [];
    const deployment = new RedisSentinelDeployment(name, servers, sentinels);
    try {
      // A full sync starts at once instead of waiting 5 s for more replicas to share it.
      const sync = ['--repl-diskless-sync-delay', '0'];
      const primary = await RedisServerProcess.start({ persistence, args: sync });
      servers.push(primary);
      for (let index = 0; index < (options.replicas ?? 2); index++) {
        const replica = await RedisServerProcess.start({
          persistence,
          args: [...sync, '--replicaof', primary.host, String(primary.port)],
        });
        servers.push(replica);
      }
      const count = options.sentinels ?? 3;
      const settings = {
        name,
        quorum: Math.floor(count / 2) + 1,
        downAfterMs: options.downAfterMs ?? 2_000,
        failoverTimeoutMs: options.failoverTimeoutMs ?? 2_000,
      };
      for (let index = 0; index < count; index++) {
        sentinels.push(await RedisSentinelProcess.start(primary, settings));
      }
      await deployment.untilHealthy();
    } catch (error) {
      await deployment.dispose();
      throw error;
    }
    return deployment;
  }

  /** Addresses for the adapter's `sentinels` option. */
  get sentinelAddresses(): Array<{ host: string; port: number }> {
    return this.sentinels.map((sentinel) => ({ host: sentinel.host, port: sentinel.port }));
  }

  /** The server every sentinel names as the primary (throws while they disagree). */
  async primary(): Promise<RedisServerProcess> {
    const ports = await Promise.all(this.sentinels.map((sentinel) => this.primaryPort(sentinel)));
    const server = this.servers.find((each) => each.port === ports[0]);
    if (server === undefined || ports.some((port) => port !== ports[0])) {
      throw new Error(`the sentinels do not agree on a primary: ${ports.join(', ')}`);
    }
    return server;
  }

  /**
   * Polls until every sentinel names the same running primary and knows the other
   * sentinels, and that primary has every other server attached as an online replica.
   */
  async untilHealthy(timeoutMs = 60_000): Promise<RedisServerProcess> {
    const deadline = Date.now() + timeoutMs;
    let last = 'not asked yet';
    for (;;) {
      try {
        const primary = await this.primary();
        const reason = await this.unhealthyReason(primary);
        if (reason === null) return primary;
        last = reason;
      } catch (error) {
        last = (error as Error).message;
      }
      if (Date.now() > deadline) {
        throw new Error(`the sentinel deployment is not healthy after ${timeoutMs} ms: ${last}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /**
   * SIGKILLs the primary, waits until every sentinel names another one, starts the killed
   * server again as a replica of it, and waits until the deployment is healthy. Returns the
   * old and the new primary.
   */
  async failover(
    timeoutMs = 60_000,
  ): Promise<{ killed: RedisServerProcess; promoted: RedisServerProcess }> {
    const killed = await this.primary();
    const epochBefore = await this.configEpoch();
    await killed.kill();
    const deadline = Date.now() + timeoutMs;
    let promoted: RedisServerProcess | null = null;
    while (promoted === null) {
      try {
        const primary = await this.primary();
        if (primary !== killed) promoted = primary;
      } catch {
        // The sentinels are still deciding.
      }
      if (promoted === null) {
        if (Date.now() > deadline) throw new Error(`no failover within ${timeoutMs} ms`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
    killed.replicaOf = { host: promoted.host, port: promoted.port };
    await killed.start();
    const healthy = await this.untilHealthy(timeoutMs);
    const epoch = await this.configEpoch();
    if (healthy !== promoted || epoch !== epochBefore + 1) {
      throw new Error(
        `a failover nobody asked for happened (config epoch ${epochBefore} → ${epoch}, primary ${promoted.port} → ${healthy.port}): the sentinels found a live primary down; raise downAfterMs`,
      );
    }
    return { killed, promoted };
  }

  async dispose(): Promise<void> {
    await Promise.all([
      ...this.sentinels.map((sentinel) => sentinel.dispose()),
      ...this.servers.map((server) => server.dispose()),
    ]);
  }

  /** The highest config epoch a sentinel reports: each failover adds one. */
  private async configEpoch(): Promise<number> {
    const epochs = await Promise.all(
      this.sentinels.map(async (sentinel) => {
        const fields = pairs((await ask(sentinel, ['SENTINEL', 'master', this.name])) as string[]);
        return Number(fields.get('config-epoch') ?? 0);
      }),
    );
    return Math.max(...epochs);
  }

  private async primaryPort(sentinel: RedisSentinelProcess): Promise<number> {
    const reply = (await ask(sentinel, ['SENTINEL', 'get-master-addr-by-name', this.name])) as
      | [string, string]
      | null;
    if (reply === null) throw new Error(`sentinel ${sentinel.port} knows no ${this.name}`);
    return Number(reply[1]);
  }

  private async unhealthyReason(primary: RedisServerProcess): Promise<string | null> {
    if (!primary.running) return `the primary ${primary.port} is not running`;
    const info = String(await ask(primary, ['INFO', 'replication']));
    if (!/role:master/.test(info)) return `${primary.port} is not a master yet`;
    for (const server of this.servers) {
      if (server === primary) continue;
      const online = new RegExp(`ip=[^,]+,port=${server.port},state=online`).test(info);
      if (!online) return `${server.port} is not an online replica of ${primary.port}`;
    }
    for (const sentinel of this.sentinels) {
      const fields = pairs((await ask(sentinel, ['SENTINEL', 'master', this.name])) as string[]);
      if (fields.get('num-other-sentinels') !== String(this.sentinels.length - 1)) {
        return `sentinel ${sentinel.port} does not know the others yet`;
      }
      if (fields.get('num-slaves') !== String(this.servers.length - 1)) {
        return `sentinel ${sentinel.port} does not know every replica yet`;
      }
      if ((fields.get('flags') ?? '') !== 'master') {
        return `sentinel ${sentinel.port} flags the primary ${fields.get('flags')}`;
      }
    }
    return null;
  }
}

/** A flat [name, value, …] reply as a map. */
function pairs(reply: readonly string[]): Map<string, string> {
  const fields = new Map<string, string>();
  for (let index = 0; index + 1 < reply.length; index += 2) {
    fields.set(reply[index]!, reply[index + 1]!);
  }
  return fields;
}

/** One command on a short-lived connection (the harness polls; it keeps nothing open). */
async function ask(target: { host: string; port: number }, command: string[]): Promise<unknown> {
  const client = new Redis({
    host: target.host,
    port: target.port,
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
    connectTimeout: 1_000,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return await client.call(command[0]!, ...command.slice(1));
  } finally {
    client.disconnect();
  }
}
