export {
  type ConfirmMethod,
  hasWaitAof,
  planDurability,
  type ServerFacts,
} from './durability-plan.js';
export { ADAPTER_NAME, RedisDurabilityError } from './errors.js';
export { KeyLayout } from './keys.js';
export type { RedisAdapterOptions, RedisDurability } from './options.js';
export {
  AOF_NOT_REPLICATED_WARNING,
  openRedisAdapter,
  RedisAdapter,
  type RedisDurabilityReport,
  redisAdapter,
  redisCapabilities,
} from './redis-adapter.js';
