import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // Unhandled rejections fail the run, also one raised after a file's last test: see
    // tooling/vitest/unhandled-rejections-fatal.ts for why both settings are needed.
    execArgv: ['--unhandled-rejections=strict'],
    setupFiles: ['../../tooling/vitest/unhandled-rejections-fatal.ts'],
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // The e2e files start server processes and a browser; running them one at a time keeps
    // the two CI cores from being oversubscribed.
    fileParallelism: false,
  },
});
