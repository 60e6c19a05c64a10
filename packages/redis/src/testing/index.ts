/**
 * Test helpers for code that runs on `@keepsake/redis`: Redis servers, clusters and Sentinel deployments this
 * process starts on free loopback ports (and stops by pid), and the choice between a
 * server named by KEEPSAKE_TEST_REDIS_URL, testcontainers and the local binary.
 */
export { freePort } from './free-port.js';
export { type RedisClusterOptions, RedisClusterProcesses } from './redis-cluster.js';
export {
  RedisSentinelDeployment,
  type RedisSentinelOptions,
  RedisSentinelProcess,
} from './redis-sentinel.js';
export {
  type RedisServerOptions,
  RedisServerProcess,
  type TestPersistence,
} from './redis-server.js';
export {
  chooseRedisTarget,
  containerEngineAvailable,
  type RedisTarget,
  type RedisTargetEnvironment,
  type RedisTargetKind,
  startRedisTarget,
} from './redis-target.js';
