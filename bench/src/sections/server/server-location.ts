import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

/**
 * The reference server's package (apps/server), run from its TypeScript sources with tsx
 * as its own tests run it, so the section needs no build of the app and measures its code
 * as it is now. From `bench/dist/sections/server/` (or `src/`), four levels up is the root.
 */
export const serverDirectory = fileURLToPath(new URL('../../../../apps/server/', import.meta.url));

/** Node flags that load TypeScript through the server's own tsx. */
export const typeScriptLoader = ['--import', 'tsx'] as const;

/** Why the section cannot run here, or null. */
export function serverUnavailableReason(): string | null {
  if (!existsSync(`${serverDirectory}src/main.ts`)) {
    return `the reference server's sources are not at ${serverDirectory}`;
  }
  try {
    createRequire(`${serverDirectory}package.json`).resolve('tsx');
  } catch {
    return 'tsx is not installed in apps/server (run pnpm install)';
  }
  return null;
}

/** A module of the server's sources, for the direct contender to import. */
export function serverModule(path: string): string {
  return new URL(path, `file://${serverDirectory}`).href;
}
