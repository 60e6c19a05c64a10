import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './free-port.js';

/** How a test server persists what it is sent. */
export type TestPersistence =
  /** Nothing: a restart loses everything (the `none` durability level). */
  | 'none'
  /** AOF with `appendfsync always`: every reply follows its fsync (the `aof` level). */
  | 'aof-always'
  /** AOF fsynced once a second: the `aof` level cannot be confirmed on Redis 7.0. */
  | 'aof-everysec';

export interface RedisServerOptions {
  persistence?: TestPersistence;
  /** Extra `redis-server` arguments, e.g. `['--replicaof', '127.0.0.1', '6379']`. */
  args?: readonly string[];
  /** Run as a Cluster node (its bus on a port of its own). */
  cluster?: boolean;
  /** The `redis-server` binary. @default 'redis-server' (or KEEPSAKE_TEST_REDIS_SERVER) */
  binary?: string;
}

const live = new Set<ChildProcess>();
let exitHookInstalled = false;

/** A test process that dies must not leave servers behind: each is stopped by its pid. */
export function trackChild(child: ChildProcess): void {
  installExitHook();
  live.add(child);
  child.once('exit', () => live.delete(child));
}

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const child of live) if (child.exitCode === null) child.kill('SIGKILL');
  });
}

/**
 * A `redis-server` this process started on a free loopback port, in a temp directory of
 * its own. `kill()` SIGKILLs it (by its pid) and `start()` starts it again on the same
 * port and directory, from its AOF: a server crash and restart.
 */
/** First starts that may find their port taken before giving up (see `start`). */
const PORT_ATTEMPTS = 5;

export class RedisServerProcess {
  readonly host = '127.0.0.1';
  readonly port: number;
  readonly busPort: number | null;
  readonly directory: string;
  readonly options: RedisServerOptions;
  /**
   * Set, the next `start()` runs the server as a replica of that primary (`--replicaof`):
   * how a failover test brings a killed primary back as a replica of the new one.
   */
  replicaOf: { readonly host: string; readonly port: number } | null = null;
  private child: ChildProcess | null = null;
  private output = '';

  private constructor(
    port: number,
    busPort: number | null,
    directory: string,
    options: RedisServerOptions,
  ) {
    this.port = port;
    this.busPort = busPort;
    this.directory = directory;
    this.options = options;
  }

  static async start(options: RedisServerOptions = {}): Promise<RedisServerProcess> {
    // A port found free is let go before redis-server binds it, and another process's
    // outgoing connection can take it meanwhile (both come from the ephemeral range): a
    // first start that finds its port taken picks new ports, a few times at most.
    for (let attempt = 1; ; attempt++) {
      const directory = await mkdtemp(join(tmpdir(), 'keepsake-redis-test-'));
      const port = await freePort();
      const busPort = options.cluster === true ? await freePort() : null;
      const server = new RedisServerProcess(port, busPort, directory, options);
      try {
        await server.start();
        return server;
      } catch (error) {
        const taken = String((error as Error).message).includes('Address already in use');
        if (!taken || attempt === PORT_ATTEMPTS) throw error;
        await rm(directory, { recursive: true, force: true });
      }
    }
  }

  get url(): string {
    return `redis://${this.host}:${this.port}`;
  }

  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  get running(): boolean {
    return this.child !== null && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** What the server printed (its log goes to stdout). */
  log(): string {
    return this.output;
  }

  /** Starts the server (again) and resolves once it accepts connections, its AOF loaded. */
  async start(): Promise<void> {
    if (this.running) return;
    const persistence = this.options.persistence ?? 'aof-always';
    const args = [
      '--port',
      String(this.port),
      '--bind',
      this.host,
      '--dir',
      this.directory,
      '--save',
      '',
      '--daemonize',
      'no',
      '--logfile',
      '',
      '--loglevel',
      'notice',
      '--appendonly',
      persistence === 'none' ? 'no' : 'yes',
      '--appendfsync',
      persistence === 'aof-everysec' ? 'everysec' : 'always',
    ];
    if (this.busPort !== null) {
      args.push(
        '--cluster-enabled',
        'yes',
        '--cluster-port',
        String(this.busPort),
        '--cluster-config-file',
        join(this.directory, 'nodes.conf'),
        '--cluster-node-timeout',
        '5000',
      );
    }
    args.push(...(this.options.args ?? []));
    if (this.replicaOf !== null) {
      args.push('--replicaof', this.replicaOf.host, String(this.replicaOf.port));
    }
    const binary = this.options.binary ?? process.env.KEEPSAKE_TEST_REDIS_SERVER ?? 'redis-server';
    const child = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    trackChild(child);
    this.output = '';
    await new Promise<void>((resolve, reject) => {
      const onData = (chunk: Buffer) => {
        this.output += chunk.toString('utf8');
        if (this.output.includes('Ready to accept connections')) {
          cleanup();
          resolve();
        }
      };
      const onExit = (code: number | null) => {
        cleanup();
        reject(new Error(`redis-server exited (${code}) before it was ready:\n${this.output}`));
      };
      const onError = (error: Error) => {
        cleanup();
        reject(error);
      };
      const cleanup = () => {
        child.stdout?.off('data', onData);
        child.off('exit', onExit);
        child.off('error', onError);
      };
      child.stdout?.on('data', onData);
      child.stderr?.on('data', (chunk: Buffer) => {
        this.output += chunk.toString('utf8');
      });
      child.once('exit', onExit);
      child.once('error', onError);
    });
    // Keep draining the log so the pipe never fills.
    child.stdout?.on('data', (chunk: Buffer) => {
      if (this.output.length < 1_000_000) this.output += chunk.toString('utf8');
    });
  }

  /** SIGKILL: the server dies at once, with whatever its AOF holds. */
  async kill(): Promise<void> {
    await this.signal('SIGKILL');
  }

  /** SIGTERM, waiting for the exit. */
  async stop(): Promise<void> {
    await this.signal('SIGTERM');
  }

  /** `kill()` then `start()`: a crash and a restart from the AOF. */
  async crashAndRestart(): Promise<void> {
    await this.kill();
    await this.start();
  }

  /** Stops the server (SIGKILL: its data is not needed) and removes its directory. */
  async dispose(): Promise<void> {
    await this.kill();
    await rm(this.directory, { recursive: true, force: true });
  }

  private async signal(signal: NodeJS.Signals): Promise<void> {
    const child = this.child;
    if (child === null || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill(signal);
    await exited;
  }
}
