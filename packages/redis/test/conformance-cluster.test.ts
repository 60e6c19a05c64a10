import { fileURLToPath } from 'node:url';
import { runConformance } from '@keepsake/conformance';
import { Cluster } from 'ioredis';
import { redisAdapter } from '../src/index.js';
import { RedisClusterProcesses } from '../src/testing/index.js';
import { type ChildTarget, conformanceKeyPrefix, TARGET_ENV } from './conformance-child.js';

/**
 * The whole suite on a 3-master Redis Cluster (AOF `appendfsync always` on every node),
 * started by this file. Every adapter shares one ioredis `Cluster` client (the `client`
 * path: the adapter neither reconfigures nor closes it), so each multi-key script must find
 * all its keys on one slot, or Redis refuses it with CROSSSLOT (H2).
 *
 * No `simulateCrash` here: a Cluster master that restarts waits 2 s before it serves writes
 * again (Redis' CLUSTER_WRITABLE_DELAY), which over the suite's ~60 restarts would cost two
 * minutes. The restart tests still run (a new store on a cold cache); server crashes are
 * proven on the standalone suite (conformance.test.ts) and, for Cluster, by
 * cluster-crash.test.ts, which SIGKILLs every master during a write loop.
 */
let cluster: RedisClusterProcesses;
let client: Cluster;

runConformance(
  {
    name: 'redis (cluster)',
    // Real second processes (H1, E2's process kills) open the same Cluster through this module.
    initializerModule: fileURLToPath(new URL('./conformance-child.ts', import.meta.url)),
    async setup() {
      cluster = await RedisClusterProcesses.start({ masters: 3 });
      const child: ChildTarget = { seeds: cluster.seeds };
      process.env[TARGET_ENV] = JSON.stringify(child);
      client = new Cluster(cluster.seeds, {
        // A lost node connection must fail its commands, not resend them (see the README).
        retryDelayOnFailover: 0,
        redisOptions: { autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 0 },
      });
      client.on('error', () => undefined);
    },
    async teardown() {
      delete process.env[TARGET_ENV];
      await client.quit();
      await cluster.dispose();
    },
    async createAdapter(namespace) {
      return redisAdapter({ client, keyPrefix: conformanceKeyPrefix(namespace) });
    },
    async destroyAdapter(adapter) {
      await adapter.close();
    },
  },
  { testTimeoutMs: 30_000 },
);
