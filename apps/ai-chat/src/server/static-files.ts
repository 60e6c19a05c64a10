import { readFile } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import { extname, join, normalize } from 'node:path';

const contentTypes: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.json': 'application/json',
};

/**
 * Serves the built page: `/assets/…` files as they are, every other path the page itself
 * (it reads the chat id from the URL).
 */
export async function serveStatic(
  clientDirectory: string,
  pathname: string,
  response: ServerResponse,
): Promise<void> {
  const relative = pathname.startsWith('/assets/') ? normalize(pathname).slice(1) : 'index.html';
  // normalize() resolved any `..`; a path still starting with it leaves the directory.
  if (relative.startsWith('..')) {
    response.writeHead(404).end();
    return;
  }
  try {
    const body = await readFile(join(clientDirectory, relative));
    response.writeHead(200, {
      'content-type': contentTypes[extname(relative)] ?? 'application/octet-stream',
      'cache-control': relative === 'index.html' ? 'no-store' : 'public, max-age=3600',
    });
    response.end(body);
  } catch {
    response
      .writeHead(404, { 'content-type': 'text/plain; charset=utf-8' })
      .end(
        relative === 'index.html'
          ? `No page built in ${clientDirectory}: run \`pnpm --filter @keepsake/example-ai-chat build\``
          : 'Not found',
      );
  }
}
