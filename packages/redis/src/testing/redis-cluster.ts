import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { RedisServerProcess, type TestPersistence } from './redis-server.js';

const run = promisify(execFile);

export interface RedisClusterOptions {
  /** @default 3 */
  masters?: number;
  persistence?: TestPersistence;
  /** The `redis-cli` binary. @default 'redis-cli' (or KEEPSAKE_TEST_REDIS_CLI) */
  cli?: string;
}

/**
 * A Redis Cluster of masters started by this process: one `redis-server
 * --cluster-enabled yes` per master, joined with `redis-cli --cluster create`, ready once
 * every node says `cluster_state:ok`.
 */
export class RedisClusterProcesses {
  readonly nodes: readonly RedisServerProcess[];
  private readonly cli: string;

  private constructor(nodes: readonly RedisServerProcess[], cli: string) {
    this.nodes = nodes;
    this.cli = cli;
  }

  static async start(options: RedisClusterOptions = {}): Promise<RedisClusterProcesses> {
    const count = options.masters ?? 3;
    const cli = options.cli ?? process.env.KEEPSAKE_TEST_REDIS_CLI ?? 'redis-cli';
    const started = await Promise.allSettled(
      Array.from({ length: count }, () =>
        RedisServerProcess.start({
          cluster: true,
          persistence: options.persistence ?? 'aof-always',
        }),
      ),
    );
    const nodes = started.flatMap((result) =>
      result.status === 'fulfilled' ? [result.value] : [],
    );
    const cluster = new RedisClusterProcesses(nodes, cli);
    try {
      const failed = started.find((result) => result.status === 'rejected');
      if (failed !== undefined) throw (failed as PromiseRejectedResult).reason;
      await run(cli, [
        '--cluster',
        'create',
        ...nodes.map((node) => `${node.host}:${node.port}`),
        '--cluster-replicas',
        '0',
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

  /** Polls every node until it reports `cluster_state:ok` (the join takes a moment). */
  async untilHealthy(attempts = 200): Promise<void> {
    for (let attempt = 0; attempt < attempts; attempt++) {
      const states = await Promise.all(
        this.nodes.map(async (node) => {
          const { stdout } = await run(this.cli, ['-p', String(node.port), 'cluster', 'info']);
          return /cluster_state:ok/.test(stdout);
        }),
      );
      if (states.every(Boolean)) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error('the test cluster never reported cluster_state:ok');
  }

  async dispose(): Promise<void> {
    await Promise.all(this.nodes.map((node) => node.dispose()));
  }
}
