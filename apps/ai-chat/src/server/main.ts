import { startChatServer } from './chat-server.js';
import { loadConfig } from './config.js';

let config: ReturnType<typeof loadConfig>;
try {
  config = loadConfig(process.env);
} catch (error) {
  console.error((error as Error).message);
  process.exit(1);
}
const server = await startChatServer(config);
console.log(`Keepsake AI SDK chat listening on ${server.url}`);
console.log(`  chats in ${config.dataDirectory}, recovery grace ${config.graceMs} ms`);

// SIGTERM/SIGINT: close the store so everything is flushed (C2); an answer still streaming
// stays a pending turn with its journal, and the next start recovers it.
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    void server.close().then(
      () => process.exit(0),
      (error: unknown) => {
        console.error(error);
        process.exit(1);
      },
    );
  });
}
