import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Agent } from '../../src/agents/agent.js';
import { configSchema, type ServerConfigInput } from '../../src/config/config-schema.js';
import { createServer, type KeepsakeServer } from '../../src/server.js';

export const aliceToken = 'alice-token-0123456789abcdef';
export const bobToken = 'bob-token-0123456789abcdef';

export interface TestServer {
  server: KeepsakeServer;
  url: string;
  dataDirectory: string;
  close(): Promise<void>;
}

export interface TestServerOptions {
  config?: ServerConfigInput;
  agent?: Agent;
  /** Two tokens, alice and bob, each its own namespace. @default true */
  tokens?: boolean;
}

/** A real server on the fs backend in a fresh temp directory, listening on a free port. */
export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const dataDirectory = await mkdtemp(join(tmpdir(), 'keepsake-server-test-'));
  const input = options.config ?? {};
  const config = configSchema.parse({
    ...input,
    server: { port: 0, logLevel: 'silent', ...input.server },
    backend: input.backend ?? { kind: 'fs', directory: dataDirectory },
    auth:
      input.auth ??
      (options.tokens === false
        ? { tokens: [] }
        : {
            tokens: [
              { token: aliceToken, namespace: 'alice' },
              { token: bobToken, namespace: 'bob' },
            ],
          }),
    agent: input.agent ?? { kind: 'scripted', tokenDelayMs: 0, answerWords: 8 },
    streaming: { pollIntervalMs: 50, ...input.streaming },
  });
  const server = await createServer(config, {
    logger: false,
    ...(options.agent ? { agent: options.agent } : {}),
  });
  const url = await server.listen();
  return {
    server,
    url,
    dataDirectory,
    async close() {
      await server.close();
      await rm(dataDirectory, { recursive: true, force: true });
    },
  };
}
