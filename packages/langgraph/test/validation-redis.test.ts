import { randomUUID } from 'node:crypto';
import { redisAdapter } from '@keepsake/redis';
import {
  containerEngineAvailable,
  type RedisTarget,
  startRedisTarget,
} from '@keepsake/redis/testing';
import { validate } from '@langchain/langgraph-checkpoint-validation';
import { KeepsakeSaver } from '../src/index.js';

// LangGraph's own checkpointer validation suite, unmodified, on the Redis adapter: a
// redis-server this file starts on a free loopback port (AOF, appendfsync always), or the
// one KEEPSAKE_TEST_REDIS_URL names; a fresh key prefix per checkpointer.
let target: RedisTarget | undefined;

validate<KeepsakeSaver>({
  checkpointerName: '@keepsake/langgraph on redis',
  beforeAllTimeout: 60_000,
  async beforeAll() {
    target = await startRedisTarget({
      env: process.env,
      containerEngine: containerEngineAvailable(),
    });
  },
  async afterAll() {
    await target?.dispose();
  },
  createCheckpointer() {
    const adapter = redisAdapter({ url: target!.url, keyPrefix: `langgraph:${randomUUID()}` });
    return new KeepsakeSaver({ adapter });
  },
  destroyCheckpointer: (saver) => saver.close(),
});
