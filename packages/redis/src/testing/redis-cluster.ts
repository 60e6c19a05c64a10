import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { RedisServerProcess, type TestPersistence } from './redis-server.js';

const run = promisify(execFile);

/**
 * How long the harness waits for the cluster to settle (a join, a failover, a rejoin). Two
 * minutes: on a 2-core CI machine running other suites beside this one, gossip and elections
 * can take many times their idle duration, and a wait that gives up early fails a test for
 * the machine's load, not for what it tests.
 */
const SETTLE_MS = 120_000;

export interface RedisClusterOptions {
  /** @default 3 */
  masters?: number;
  /** Replicas per master (`--cluster-replicas`). @default 0 */
  replicas?: number;
  /**
   * `cluster-node-timeout`: how long a silent master takes to be failed over to its
   * replica. @default 5_000
   */
  nodeTimeoutMs?: number;
  persistence?: TestPersistence;
  /** The `redis-cli` binary. @default 'redis-cli' (or KEEPSAKE_TEST_REDIS_CLI) */
  cli?: string;
}

/**
 * A Redis Cluster started by this process: one `redis-server --cluster-enabled yes` per
 * master and per replica, joined with `redis-cli --cluster create`, ready once every node
 * says `cluster_state:ok`. `killMaster` and `manualFailover` fail a master over to its
 * replica, for the failover tests.
 */
export class RedisClusterProcesses {
  readonly nodes: readonly RedisServerProcess[];
  private readonly cli: string;
  /** `cluster-node-timeout` of every node (the harness's default: 5 s). */
  private readonly nodeTimeoutMs: number;

  private constructor(nodes: readonly RedisServerProcess[], cli: string, nodeTimeoutMs: number) {
    this.nodes = nodes;
    this.cli = cli;
    this.nodeTimeoutMs = nodeTimeoutMs;
  }

  static async start(options: RedisClusterOptions = {}): Promise<RedisClusterProcesses> {
    const count = (options.masters ?? 3) * (1 + (options.replicas ?? 0));
    const args =
      options.nodeTimeoutMs === undefined
        ? []
        : ['--cluster-node-timeout', String(options.nodeTimeoutMs)];
    // A replica's full sync starts at once instead of waiting 5 s for others to share it.
    if ((options.replicas ?? 0) > 0) args.push('--repl-diskless-sync-delay', '0');
    const cli = options.cli ?? process.env.KEEPSAKE_TEST_REDIS_CLI ?? 'redis-cli';
    const started = await Promise.allSettled(
      Array.from({ length: count }, () =>
        RedisServerProcess.start({
          cluster: true,
          persistence: options.persistence ?? 'aof-always',
          args,
        }),
      ),
    );
    const nodes = started.flatMap((result) =>
      result.status === 'fulfilled' ? [result.value] : [],
    );
    const cluster = new RedisClusterProcesses(nodes, cli, options.nodeTimeoutMs ?? 5_000);
    try {
      const failed = started.find((result) => result.status === 'rejected');
      if (failed !== undefined) throw (failed as PromiseRejectedResult).reason;
      await run(cli, [
        '--cluster',
        'create',
        ...nodes.map((node) => `${node.host}:${node.port}`),
        '--cluster-replicas',
        String(options.replicas ?? 0),
        '--cluster-yes',
      ]);
      await cluster.untilHealthy();
    } catch (error) {
      await cluster.dispose();
      throw error;
    }
    return cluster;
  }

  /** Seed nodes for `clusterNodes` / `new Cluster(…)`. */
  get seeds(): Array<{ host: string; port: number }> {
    return this.nodes.map((node) => ({ host: node.host, port: node.port }));
  }

  /**
   * Polls until every running node reports `cluster_state:ok` (the join takes a moment) and,
   * with `replicated`, every master has an online replica and every node is running.
   */
  async untilHealthy(timeoutMs = SETTLE_MS, replicated = false): Promise<void> {
    let last = '';
    for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; ) {
      const running = this.nodes.filter((node) => node.running);
      const states = await Promise.all(
        running.map(async (node) => {
          const { stdout } = await run(this.cli, ['-p', String(node.port), 'cluster', 'info']);
          return /cluster_state:ok/.test(stdout) ? null : node;
        }),
      );
      const failing = states.find((node) => node !== null);
      last = failing == null ? '' : `node ${failing.port} is not cluster_state:ok`;
      if (last === '' && replicated) last = await this.replicationProblem();
      if (last === '') return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(
      `the test cluster is not healthy after ${timeoutMs} ms: ${last}\n${await this.describe()}`,
    );
  }

  /**
   * What each node says of the cluster (CLUSTER INFO's state and epochs, CLUSTER NODES) and
   * the end of its log: a failover test that fails on an unhealthy cluster says why.
   */
  async describe(): Promise<string> {
    const parts: string[] = [];
    for (const node of this.nodes) {
      if (!node.running) {
        parts.push(`--- ${node.port}: not running`);
        continue;
      }
      const ask = async (...args: string[]) =>
        (
          await run(this.cli, ['-p', String(node.port), ...args]).catch((error: Error) => ({
            stdout: `(${error.message})`,
          }))
        ).stdout.trim();
      const info = (await ask('cluster', 'info'))
        .split('\n')
        .filter((line) => /state|epoch|slots_fail|slots_pfail/.test(line))
        .join(' ');
      const log = node.log().trim().split('\n').slice(-15).join('\n');
      parts.push(
        `--- ${node.port}: ${info}\n${await ask('cluster', 'nodes')}\n--- log of ${node.port}:\n${log}`,
      );
    }
    return parts.join('\n');
  }

  /** Each node's role (`ROLE`), by node; a stopped node is missing. */
  async roles(): Promise<Map<RedisServerProcess, 'master' | 'slave'>> {
    const roles = new Map<RedisServerProcess, 'master' | 'slave'>();
    for (const node of this.nodes.filter((each) => each.running)) {
      const { stdout } = await run(this.cli, ['-p', String(node.port), 'role']);
      roles.set(node, stdout.startsWith('master') ? 'master' : 'slave');
    }
    return roles;
  }

  /**
   * SIGKILLs `master`, waits until one of its replicas took over (every running node
   * `cluster_state:ok`, `master` no longer named a master by any of them), starts it again
   * (it rejoins as a replica of the new master) and waits until every master has an
   * online replica.
   */
  async killMaster(master: RedisServerProcess): Promise<void> {
    const replicas = await this.replicasOf(master);
    if (replicas.length === 0) throw new Error(`${master.port} has no replica to fail over to`);
    await master.kill();
    for (const deadline = Date.now() + SETTLE_MS; ; ) {
      const roles = await this.roles();
      if (replicas.some((replica) => roles.get(replica) === 'master')) break;
      if (Date.now() > deadline) throw new Error(`no replica took over from ${master.port}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await this.untilHealthy();
    await master.start();
    await this.untilHealthy(SETTLE_MS, true);
  }

  /** The running nodes that replicate `master` (`ROLE`: slave, its host and port). */
  async replicasOf(master: RedisServerProcess): Promise<RedisServerProcess[]> {
    const replicas: RedisServerProcess[] = [];
    for (const node of this.nodes.filter((each) => each.running && each !== master)) {
      const { stdout } = await run(this.cli, ['-p', String(node.port), 'role']);
      const [role, , port] = stdout.split('\n');
      if (role === 'slave' && Number(port) === master.port) replicas.push(node);
    }
    return replicas;
  }

  /**
   * `CLUSTER FAILOVER` on `replica`: it and its master swap roles, without data loss. Sent
   * again while the replica is not a master after twice the node timeout and a little more:
   * an OK only schedules the failover, which Redis aborts after 5 s when it cannot finish,
   * e.g. when the masters refuse to vote because they voted for this shard less than two node
   * timeouts ago (an automatic failover just before).
   */
  async manualFailover(replica: RedisServerProcess): Promise<void> {
    const deadline = Date.now() + SETTLE_MS;
    const resendAfterMs = this.nodeTimeoutMs * 2 + 1_000;
    for (let sentAt = -Infinity; (await this.roles()).get(replica) !== 'master'; ) {
      if (Date.now() > deadline) throw new Error(`${replica.port} never became a master`);
      if (Date.now() - sentAt > resendAfterMs) {
        await run(this.cli, ['-p', String(replica.port), 'cluster', 'failover']);
        sentAt = Date.now();
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await this.untilHealthy(SETTLE_MS, true);
  }

  /** Why not every master has an online replica, or '' when each does. */
  private async replicationProblem(): Promise<string> {
    for (const node of this.nodes) {
      if (!node.running) return `${node.port} is not running`;
      const { stdout } = await run(this.cli, ['-p', String(node.port), 'info', 'replication']);
      if (/role:master/.test(stdout) && !/state=online/.test(stdout)) {
        return `master ${node.port} has no online replica`;
      }
      if (/role:slave/.test(stdout) && !/master_link_status:up/.test(stdout)) {
        return `replica ${node.port} is not in sync`;
      }
    }
    return '';
  }

  async dispose(): Promise<void> {
    await Promise.all(this.nodes.map((node) => node.dispose()));
  }
}
