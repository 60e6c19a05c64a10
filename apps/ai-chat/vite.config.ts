import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

/**
 * The page: src/client built to dist/client, which the example's server serves next to its
 * API (one process, one port). No dev server is needed to run the example.
 */
export default defineConfig({
  root: fileURLToPath(new URL('./src/client', import.meta.url)),
  build: {
    outDir: fileURLToPath(new URL('./dist/client', import.meta.url)),
    emptyOutDir: true,
    rolldownOptions: {
      // SWR (under @ai-sdk/react) marks its modules 'use client', which means nothing here.
      onwarn(warning, warn) {
        if (warning.code !== 'MODULE_LEVEL_DIRECTIVE') warn(warning);
      },
    },
  },
  oxc: { jsx: { runtime: 'automatic' } },
  logLevel: 'warn',
});
