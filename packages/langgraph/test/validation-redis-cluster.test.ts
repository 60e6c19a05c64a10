import { randomUUID } from 'node:crypto';
import { redisAdapter } from '@keepsake/redis';
import { RedisClusterProcesses } from '@keepsake/redis/testing';
import { validate } from '@langchain/langgraph-checkpoint-validation';
import { KeepsakeSaver } from '../src/index.js';

// LangGraph's own checkpointer validation suite, unmodified, on a Redis Cluster (H2): three
// masters this file starts on free loopback ports (AOF, appendfsync always) and stops by pid;
// a fresh key prefix per checkpointer. A thread's log is one journal, in one slot.
let cluster: RedisClusterProcesses | undefined;

validate<KeepsakeSaver>({
  checkpointerName: '@keepsake/langgraph on redis cluster',
  beforeAllTimeout: 120_000,
  async beforeAll() {
    cluster = await RedisClusterProcesses.start({ masters: 3 });
  },
  async afterAll() {
    await cluster?.dispose();
  },
  createCheckpointer() {
    const adapter = redisAdapter({
      clusterNodes: cluster!.seeds,
      keyPrefix: `langgraph:${randomUUID()}`,
    });
    return new KeepsakeSaver({ adapter });
  },
  destroyCheckpointer: (saver) => saver.close(),
});
