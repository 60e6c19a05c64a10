import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // Unhandled rejections fail the run, also one raised after a file's last test: see
    // tooling/vitest/unhandled-rejections-fatal.ts for why both settings are needed.
    execArgv: ['--unhandled-rejections=strict'],
    setupFiles: ['../../tooling/vitest/unhandled-rejections-fatal.ts'],
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 180_000,
    // The crash tests start child processes and time a recovery grace; two files at a time
    // keep a 2-core machine responsive.
    maxWorkers: 2,
  },
});
