import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createResumableStreamContext } from '@keepsake/ai-sdk';
import { createSessionStore } from '@keepsake/core';
import { fsAdapter } from '@keepsake/fs';
import { handleApi } from './chat-routes.js';
import type { ChatServerConfig } from './config.js';
import { HttpError, sendError } from './http-helpers.js';
import { serveStatic } from './static-files.js';

export interface ChatServer {
  readonly url: string;
  close(): Promise<void>;
}

/**
 * The example's server: chats on the fs backend (every chunk fsynced before a page sees it,
 * `journal.durability: 'group'`), the AI SDK routes, and the built page. Binds 127.0.0.1.
 */
export async function startChatServer(config: ChatServerConfig): Promise<ChatServer> {
  const store = createSessionStore({
    adapter: fsAdapter({ directory: config.dataDirectory }),
    journal: { durability: 'group' },
    recovery: { graceMs: config.graceMs },
    // A live answer refreshes its heartbeat well within the grace, so no other server
    // mistakes a slow model for a dead one.
    checkpoint: {
      intervalMs: Math.max(1, Math.min(5_000, Math.floor(config.graceMs / 4))),
      idleRefreshMs: Math.max(1, Math.floor(config.graceMs / 3)),
    },
  });
  const streams = createResumableStreamContext({
    store,
    graceMs: config.graceMs,
    pollIntervalMs: 100,
  });
  const routes = { store, streams, config };
  const server: Server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://127.0.0.1');
    void (async () => {
      if (url.pathname.startsWith('/api/')) {
        if (!(await handleApi(routes, request, response, url.pathname))) {
          throw new HttpError(404, `No route ${url.pathname}`);
        }
        return;
      }
      if (request.method !== 'GET') throw new HttpError(405, 'Only GET serves the page');
      await serveStatic(config.clientDirectory, url.pathname, response);
    })().catch((error: unknown) => sendError(response, error));
  });
  server.listen(config.port, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    async close() {
      streams.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      // Answers still streaming stay pending turns: the next start recovers them (F1).
      await store.close();
    },
  };
}
