import { KeepsakeError } from '@keepsake/core';
import { describeBackend } from './backends/backend-factory.js';
import { loadConfig } from './config/load-config.js';
import { describeListenError } from './listen-errors.js';
import { createServer } from './server.js';
import { StartupError } from './startup/startup-error.js';

/**
 * `pnpm start`: configuration from the environment (and KEEPSAKE_CONFIG), then listen and
 * print the URL. SIGTERM and SIGINT shut down gracefully within the configured deadline.
 */
async function main(): Promise<void> {
  const config = loadConfig();
  const server = await createServer(config);
  let url: string;
  try {
    url = await server.listen();
  } catch (error) {
    const problem = describeListenError(error, config);
    if (problem === null) throw error;
    console.error(problem);
    // The stores opened before listening: close them (C2) before leaving.
    await server.close();
    process.exit(1);
  }
  const auth = server.namespaces.openMode
    ? 'open mode — no tokens configured, one "default" namespace, loopback only (set KEEPSAKE_TOKENS to require tokens)'
    : `${config.auth.tokens.length} token(s)`;
  console.log(
    [
      `Keepsake server listening on ${url}`,
      `  backend: ${describeBackend(config.backend)}`,
      `  agent:   ${server.agent.name}`,
      `  auth:    ${auth}`,
    ].join('\n'),
  );

  let signalled = false;
  const shutdown = async (signal: NodeJS.Signals) => {
    if (signalled) return;
    signalled = true;
    console.log(
      `${signal} received: shutting down (deadline ${config.server.shutdownDeadlineMs} ms)`,
    );
    const report = await server.close();
    console.log(
      `shutdown ${report.timedOut ? 'timed out' : 'complete'}: ${JSON.stringify(report)}`,
    );
    process.exit(report.timedOut ? 1 : 0);
  };
  process.once('SIGTERM', (signal) => void shutdown(signal));
  process.once('SIGINT', (signal) => void shutdown(signal));
}

main().catch((error: unknown) => {
  if (KeepsakeError.isInstance(error) || error instanceof StartupError) {
    console.error(error.message);
  } else {
    console.error(error);
  }
  process.exit(1);
});
