import { fileURLToPath } from 'node:url';

export interface ChatServerConfig {
  /** `PORT`: 0 picks a free port. @default 0 */
  port: number;
  /** `KEEPSAKE_CHAT_DATA_DIR`: where the chats live (fs backend). @default ./data */
  dataDirectory: string;
  /** `KEEPSAKE_CHAT_CLIENT_DIR`: the built page (`vite build`). @default dist/client */
  clientDirectory: string;
  /**
   * `KEEPSAKE_CHAT_GRACE_MS`: the recovery grace (F1). Short for a demo, so a killed
   * server's answer is recovered within seconds; production keeps core's 30 s. @default 5000
   */
  graceMs: number;
  /** `KEEPSAKE_CHAT_TOKEN_DELAY_MS`: the scripted model's pause between words. @default 60 */
  tokenDelayMs: number;
  /** `KEEPSAKE_CHAT_ANSWER_WORDS`: the scripted answer's length. @default 60 */
  answerWords: number;
}

const packageDirectory = fileURLToPath(new URL('../../', import.meta.url));

/** Reads the environment; a bad value throws an Error naming the variable to fix. */
export function loadConfig(env: Readonly<Record<string, string | undefined>>): ChatServerConfig {
  return {
    port: integer(env, 'PORT', 0, 0, 65_535),
    dataDirectory: env.KEEPSAKE_CHAT_DATA_DIR?.trim() || 'data',
    clientDirectory: env.KEEPSAKE_CHAT_CLIENT_DIR?.trim() || `${packageDirectory}dist/client`,
    graceMs: integer(env, 'KEEPSAKE_CHAT_GRACE_MS', 5_000, 1, 86_400_000),
    tokenDelayMs: integer(env, 'KEEPSAKE_CHAT_TOKEN_DELAY_MS', 60, 0, 10_000),
    answerWords: integer(env, 'KEEPSAKE_CHAT_ANSWER_WORDS', 60, 1, 10_000),
  };
}

function integer(
  env: Readonly<Record<string, string | undefined>>,
  name: string,
  fallback: number,
  minimum: number,
  maximum: number,
): number {
  const text = env[name]?.trim();
  if (text === undefined || text === '') return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < minimum || value > maximum) {
    throw new Error(`${name} must be an integer from ${minimum} to ${maximum}, not "${text}"`);
  }
  return value;
}
