import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'vite';

/**
 * Builds the page with the app's own vite.config.ts into a temp directory, so the test runs
 * the page as it is now, without depending on (or overwriting) a `pnpm build` in dist/.
 */
export async function buildClient(): Promise<string> {
  const outDir = await mkdtemp(join(tmpdir(), 'keepsake-ai-chat-client-'));
  await build({
    configFile: fileURLToPath(new URL('../../vite.config.ts', import.meta.url)),
    build: { outDir, emptyOutDir: true },
    logLevel: 'error',
  });
  return outDir;
}
