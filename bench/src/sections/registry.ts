import { durableSaveSection } from './fs/durable-save.js';
import { flushAllSection } from './fs/flush-all.js';
import { journalAppendSection } from './fs/journal-append.js';
import { memorySection } from './fs/memory.js';
import { pacedStreamsSection } from './fs/paced-streams.js';
import { recoverySection } from './fs/recovery.js';
import { langgraphSaverSection } from './langgraph/langgraph-saver.js';
import { openaiAgentsSessionSection } from './openai-agents/session-turns.js';
import { redisDurableSection } from './redis/redis-durable.js';
import { s3DurableSection } from './s3/s3-durable.js';
import type { Section } from './section.js';
import { serverFollowersSection } from './server/server-followers.js';
import { serverLoadSection } from './server/server-load.js';
import { takeoverSection } from './takeover/takeover.js';

/**
 * Every section, in report order. Redis and S3 sections go in `sections/redis/` and
 * `sections/s3/` with their own baselines (raw client calls against the same server) and a
 * `unavailableReason` that names the environment variable pointing at a server.
 */
export const sections: readonly Section[] = [
  durableSaveSection,
  journalAppendSection,
  pacedStreamsSection,
  flushAllSection,
  recoverySection,
  memorySection,
  redisDurableSection,
  s3DurableSection,
  langgraphSaverSection,
  openaiAgentsSessionSection,
  serverLoadSection,
  serverFollowersSection,
  takeoverSection,
];
