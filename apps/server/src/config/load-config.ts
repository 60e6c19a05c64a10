import { readFileSync } from 'node:fs';
import { InvalidConfigError } from '@keepsake/core';
import type { z } from 'zod';
import { configSchema, type ServerConfig } from './config-schema.js';

type Environment = Readonly<Record<string, string | undefined>>;

type EnvValueKind = 'string' | 'integer' | 'tokens';

/** Where each environment variable lands in the configuration, and how it is parsed. */
const environmentVariables: ReadonlyArray<{ name: string; path: string[]; kind: EnvValueKind }> = [
  { name: 'PORT', path: ['server', 'port'], kind: 'integer' },
  { name: 'HOST', path: ['server', 'host'], kind: 'string' },
  { name: 'KEEPSAKE_BODY_LIMIT_BYTES', path: ['server', 'bodyLimitBytes'], kind: 'integer' },
  { name: 'KEEPSAKE_MAX_MESSAGE_CHARS', path: ['server', 'maxMessageChars'], kind: 'integer' },
  { name: 'KEEPSAKE_RATE_LIMIT_MAX', path: ['server', 'rateLimit', 'max'], kind: 'integer' },
  {
    name: 'KEEPSAKE_RATE_LIMIT_WINDOW_MS',
    path: ['server', 'rateLimit', 'windowMs'],
    kind: 'integer',
  },
  {
    name: 'KEEPSAKE_SHUTDOWN_DEADLINE_MS',
    path: ['server', 'shutdownDeadlineMs'],
    kind: 'integer',
  },
  {
    name: 'KEEPSAKE_READINESS_TIMEOUT_MS',
    path: ['server', 'readinessTimeoutMs'],
    kind: 'integer',
  },
  { name: 'KEEPSAKE_READINESS_CACHE_MS', path: ['server', 'readinessCacheMs'], kind: 'integer' },
  { name: 'KEEPSAKE_INSTANCE_ID', path: ['server', 'instanceId'], kind: 'string' },
  { name: 'KEEPSAKE_LOG_LEVEL', path: ['server', 'logLevel'], kind: 'string' },
  { name: 'KEEPSAKE_BACKEND', path: ['backend', 'kind'], kind: 'string' },
  { name: 'KEEPSAKE_DATA_DIR', path: ['backend', 'directory'], kind: 'string' },
  { name: 'KEEPSAKE_REDIS_URL', path: ['backend', 'url'], kind: 'string' },
  { name: 'KEEPSAKE_REDIS_KEY_PREFIX', path: ['backend', 'keyPrefix'], kind: 'string' },
  { name: 'KEEPSAKE_REDIS_MODE', path: ['backend', 'mode'], kind: 'string' },
  { name: 'KEEPSAKE_REDIS_SENTINELS', path: ['backend', 'sentinels'], kind: 'string' },
  {
    name: 'KEEPSAKE_REDIS_SENTINEL_PASSWORD',
    path: ['backend', 'sentinelPassword'],
    kind: 'string',
  },
  { name: 'KEEPSAKE_REDIS_DURABILITY', path: ['backend', 'durability'], kind: 'string' },
  { name: 'KEEPSAKE_REDIS_REPLICAS', path: ['backend', 'replicas'], kind: 'integer' },
  { name: 'KEEPSAKE_S3_BUCKET', path: ['backend', 'bucket'], kind: 'string' },
  { name: 'KEEPSAKE_S3_PREFIX', path: ['backend', 'prefix'], kind: 'string' },
  { name: 'KEEPSAKE_S3_REGION', path: ['backend', 'region'], kind: 'string' },
  { name: 'KEEPSAKE_S3_ENDPOINT', path: ['backend', 'endpoint'], kind: 'string' },
  { name: 'KEEPSAKE_S3_FORCE_PATH_STYLE', path: ['backend', 'forcePathStyle'], kind: 'string' },
  { name: 'KEEPSAKE_S3_ACCESS_KEY_ID', path: ['backend', 'accessKeyId'], kind: 'string' },
  { name: 'KEEPSAKE_S3_SECRET_ACCESS_KEY', path: ['backend', 'secretAccessKey'], kind: 'string' },
  { name: 'KEEPSAKE_S3_COMPATIBILITY', path: ['backend', 'compatibility'], kind: 'string' },
  {
    name: 'KEEPSAKE_S3_UNSAFE_SINGLE_WRITER',
    path: ['backend', 'unsafeSingleWriter'],
    kind: 'string',
  },
  { name: 'KEEPSAKE_S3_CREATE_BUCKET', path: ['backend', 'createBucket'], kind: 'string' },
  {
    name: 'KEEPSAKE_S3_JOURNAL_WINDOW_MS',
    path: ['backend', 'journalBatchWindowMs'],
    kind: 'integer',
  },
  { name: 'KEEPSAKE_TOKENS', path: ['auth', 'tokens'], kind: 'tokens' },
  { name: 'KEEPSAKE_AGENT', path: ['agent', 'kind'], kind: 'string' },
  {
    name: 'KEEPSAKE_SCRIPTED_TOKEN_DELAY_MS',
    path: ['agent', 'tokenDelayMs'],
    kind: 'integer',
  },
  { name: 'KEEPSAKE_SCRIPTED_ANSWER_WORDS', path: ['agent', 'answerWords'], kind: 'integer' },
  { name: 'KEEPSAKE_OPENAI_BASE_URL', path: ['agent', 'baseUrl'], kind: 'string' },
  { name: 'KEEPSAKE_OPENAI_API_KEY', path: ['agent', 'apiKey'], kind: 'string' },
  { name: 'KEEPSAKE_OPENAI_MODEL', path: ['agent', 'model'], kind: 'string' },
  { name: 'KEEPSAKE_OPENAI_TIMEOUT_MS', path: ['agent', 'timeoutMs'], kind: 'integer' },
  { name: 'KEEPSAKE_OPENAI_SYSTEM_PROMPT', path: ['agent', 'systemPrompt'], kind: 'string' },
  {
    name: 'KEEPSAKE_JOURNAL_DURABILITY',
    path: ['store', 'journalDurability'],
    kind: 'string',
  },
  { name: 'KEEPSAKE_RECOVERY_GRACE_MS', path: ['store', 'recoveryGraceMs'], kind: 'integer' },
  {
    name: 'KEEPSAKE_CHECKPOINT_INTERVAL_MS',
    path: ['store', 'checkpointIntervalMs'],
    kind: 'integer',
  },
  { name: 'KEEPSAKE_STREAM_POLL_MS', path: ['streaming', 'pollIntervalMs'], kind: 'integer' },
  { name: 'KEEPSAKE_SSE_HEARTBEAT_MS', path: ['streaming', 'heartbeatMs'], kind: 'integer' },
];

export interface LoadConfigOptions {
  /** @default process.env */
  env?: Environment;
  /** A JSON file read before the environment; `KEEPSAKE_CONFIG` names it when omitted. */
  file?: string;
}

/**
 * Builds the configuration from a JSON file (optional) overlaid with environment variables,
 * then validates it. Any problem becomes one `InvalidConfigError` that names the exact
 * variable or file field to fix, so a bad value never surfaces later as a 500.
 */
export function loadConfig(options: LoadConfigOptions = {}): ServerConfig {
  const env = options.env ?? process.env;
  const file = options.file ?? nonEmpty(env.KEEPSAKE_CONFIG);
  const raw: Record<string, unknown> = file === undefined ? {} : readConfigFile(file);
  const fromFile = structuredClone(raw);
  const origins = new Map<string, string>();

  for (const variable of environmentVariables) {
    const text = nonEmpty(env[variable.name]);
    if (text === undefined) continue;
    setPath(raw, variable.path, parseEnvValue(variable.name, variable.kind, text));
    origins.set(variable.path.join('.'), variable.name);
  }
  inferKinds(raw);

  const result = configSchema.safeParse(raw);
  if (!result.success) {
    throw new InvalidConfigError(describeIssues(result.error, origins, fromFile, file), {
      cause: result.error,
    });
  }
  return result.data;
}

/**
 * Fills in `kind` where the other fields say it: the OpenAI-compatible agent as soon as its
 * URL or key is set (a missing half is then reported by name), the fs backend otherwise.
 */
function inferKinds(raw: Record<string, unknown>): void {
  const agent = raw.agent as Record<string, unknown> | undefined;
  if (agent !== undefined && agent.kind === undefined) {
    agent.kind = agent.baseUrl !== undefined || agent.apiKey !== undefined ? 'openai' : 'scripted';
  }
  const backend = raw.backend as Record<string, unknown> | undefined;
  if (backend !== undefined && backend.kind === undefined) backend.kind = 'fs';
}

function readConfigFile(file: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new InvalidConfigError(`Cannot read the configuration file ${file} (KEEPSAKE_CONFIG)`, {
      cause: error,
    });
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new InvalidConfigError(`The configuration file ${file} is not valid JSON`, {
      cause: error,
    });
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new InvalidConfigError(`The configuration file ${file} must hold a JSON object`);
  }
  return parsed as Record<string, unknown>;
}

function parseEnvValue(name: string, kind: EnvValueKind, text: string): unknown {
  if (kind === 'string') return text;
  if (kind === 'integer') {
    if (!/^-?\d+$/.test(text.trim())) {
      throw new InvalidConfigError(`${name} must be a whole number (got ${JSON.stringify(text)})`);
    }
    return Number(text.trim());
  }
  // KEEPSAKE_TOKENS: comma-separated `namespace:token` pairs.
  return text
    .split(',')
    .map((pair) => pair.trim())
    .filter((pair) => pair.length > 0)
    .map((pair) => {
      const separator = pair.indexOf(':');
      if (separator <= 0) {
        throw new InvalidConfigError(
          `${name} must be a comma-separated list of namespace:token pairs (an entry has no "namespace:" part)`,
        );
      }
      return { namespace: pair.slice(0, separator), token: pair.slice(separator + 1) };
    });
}

function describeIssues(
  error: z.ZodError,
  origins: Map<string, string>,
  fromFile: Record<string, unknown>,
  file: string | undefined,
): string {
  const lines = error.issues.map((issue) => {
    const path = issue.path.map(String);
    const where =
      findOrigin(path, origins) ??
      (file !== undefined && hasPath(fromFile, path)
        ? `${file} → ${path.join('.')}`
        : describeUnsetPath(path, file));
    return `  - ${where}: ${issue.message}`;
  });
  return `Invalid server configuration:\n${lines.join('\n')}`;
}

function findOrigin(path: string[], origins: Map<string, string>): string | undefined {
  for (let length = path.length; length > 0; length--) {
    const origin = origins.get(path.slice(0, length).join('.'));
    if (origin !== undefined) {
      const rest = path.slice(length);
      return rest.length === 0 ? origin : `${origin} (${rest.join('.')})`;
    }
  }
  return undefined;
}

/** A required value that was never given: name both ways of giving it. */
function describeUnsetPath(path: string[], file: string | undefined): string {
  const key = path.join('.');
  const variable = environmentVariables.find((entry) => entry.path.join('.') === key);
  const inFile = file ? `${key} in ${file}` : `${key} in a KEEPSAKE_CONFIG file`;
  return variable ? `${variable.name} (or ${inFile})` : inFile;
}

function hasPath(source: Record<string, unknown>, path: string[]): boolean {
  let cursor: unknown = source;
  for (const key of path) {
    if (typeof cursor !== 'object' || cursor === null || !(key in cursor)) return false;
    cursor = (cursor as Record<string, unknown>)[key];
  }
  return true;
}

function setPath(target: Record<string, unknown>, path: string[], value: unknown): void {
  let cursor = target;
  for (const key of path.slice(0, -1)) {
    const next = cursor[key];
    if (typeof next !== 'object' || next === null || Array.isArray(next)) cursor[key] = {};
    cursor = cursor[key] as Record<string, unknown>;
  }
  cursor[path[path.length - 1]!] = value;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value;
}
